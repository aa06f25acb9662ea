// A minimal Node application using the official `openai` package, unchanged but for its
// base URL (OPENAI_BASE_URL, read by the package itself): the README's proxy example.
// It names its trace with an optional header, shows the answer and tells the proxy
// what it showed (the destination endpoint), then prints the attempt id the proxy sent back.
import OpenAI from "openai";

const client = new OpenAI({ maxRetries: 0 });
const { data: stream, response } = await client.responses
  .create({ model: "gpt-4o", input: "Capital of France?", stream: true },
          { headers: { "X-Tracestore-Trace": "capital" } })
  .withResponse();
let answer = "";
for await (const event of stream) {
  if (event.type === "response.output_text.delta") answer += event.delta;
}
console.log(answer);
const attempt = response.headers.get("x-tracestore-attempt");
await fetch(new URL("/.tracestore/destinations", client.baseURL), {
  method: "POST", headers: { "content-type": "application/json" },
  body: JSON.stringify({ attempt, destination: "ui", text: answer }),
});
console.log(`attempt ${attempt} (trace capital)`);
