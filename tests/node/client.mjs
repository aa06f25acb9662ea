// A real non-Python application for the proxy tests: Node's `openai` package streaming
// through `tracestore proxy`.  Usage: node client.mjs MODE PROXY_URL
//   full   read a whole stream
//   abort  AbortController.abort() at the first text delta (the user's Stop)
//   retry  the old stream (under /old) is held mid-body; the retry (headers name the trace
//          and the attempt it retries) is read whole, the old one finished after it, and
//          the answer shown is posted to the proxy's destination endpoint
// Prints one JSON object: the attempt ids (X-Tracestore-Attempt) and the text each read.
import OpenAI from "openai";

const [mode, proxy] = process.argv.slice(2);
const client = (path) => new OpenAI({ apiKey: "sk-node-SECRET", baseURL: `${proxy}${path}`, maxRetries: 0 });

async function open(path, headers = {}, signal = undefined) {
  const { data, response } = await client(path)
    .responses.create({ model: "gpt-4o", input: "Capital of France?", stream: true },
                      { headers, signal })
    .withResponse();
  return { stream: data, attempt: response.headers.get("x-tracestore-attempt") };
}

async function readAll(stream, text = "") {
  for await (const event of stream) {
    if (event.type === "response.output_text.delta") text += event.delta;
  }
  return text;
}

const out = {};
if (mode === "full") {
  const { stream, attempt } = await open("/v1");
  Object.assign(out, { attempt, text: await readAll(stream) });
} else if (mode === "abort") {
  const controller = new AbortController();
  const { stream, attempt } = await open("/v1", {}, controller.signal);
  out.attempt = attempt;
  out.text = "";
  try {
    for await (const event of stream) {
      if (event.type === "response.output_text.delta") {
        out.text += event.delta;
        controller.abort();  // the user's Stop
      }
    }
  } catch (err) {
    out.error = err.constructor.name;
  }
} else if (mode === "retry") {
  const old = await open("/old/v1", { "X-Tracestore-Trace": "t8", "X-Tracestore-Attempt": "old" });
  const oldIter = old.stream[Symbol.asyncIterator]();
  let oldText = "";
  for (;;) {  // the old stream until its first text delta (the upstream then holds it)
    const { value, done } = await oldIter.next();
    if (done) break;
    if (value.type === "response.output_text.delta") { oldText += value.delta; break; }
  }
  const retry = await open("/v1", { "X-Tracestore-Trace": "t8", "X-Tracestore-Retry-Of": "old" });
  const answer = await readAll(retry.stream);
  for (;;) {  // the old stream goes on delivering after the retry finished (T8)
    const { value, done } = await oldIter.next();
    if (done) break;
    if (value.type === "response.output_text.delta") oldText += value.delta;
  }
  const posted = await fetch(`${proxy}/.tracestore/destinations`, {
    method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ attempt: retry.attempt, destination: "ui", text: answer }),
  });
  Object.assign(out, { old: old.attempt, attempt: retry.attempt, text: answer, oldText,
                       posted: posted.status });
}
console.log(JSON.stringify(out));
