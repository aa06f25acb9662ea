// A Node chat app on the `openai` package's Chat Completions, behind `tracestore proxy`
// (its base URL is the proxy's), for the conformance pack's Stop cases.
// Usage: node chat.mjs MODE PROXY_URL
//   stop             AbortController.abort() at the first text (the user's Stop); the
//                    partial it showed stays on the UI, posted marked cut off
//   stop_then_retry  the same Stop, then a retry naming the attempt it replaces
//                    (X-Tracestore-Retry-Of), read whole; its answer goes to UI and history
// Prints one JSON object: the attempt ids (X-Tracestore-Attempt) and the text each showed.
import OpenAI from "openai";

const [mode, proxy] = process.argv.slice(2);
const client = new OpenAI({ apiKey: "sk-node-SECRET", baseURL: `${proxy}/v1`, maxRetries: 0 });
const question = "When is the public desk open?";

async function open(headers, signal = undefined) {
  const { data, response } = await client.chat.completions
    .create({ model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: question }] },
            { headers, signal })
    .withResponse();
  return { stream: data, attempt: response.headers.get("x-tracestore-attempt") };
}

async function untilFirstText(stream, controller) {
  let shown = "";
  try {
    for await (const chunk of stream) {
      const text = chunk.choices[0]?.delta?.content;
      if (text) { shown += text; controller.abort(); }  // the user's Stop
    }
  } catch (err) {
    if (!controller.signal.aborted) throw err;
  }
  return shown;
}

async function readAll(stream) {
  let text = "", finish = null;
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      text += choice.delta?.content ?? "";
      finish = choice.finish_reason ?? finish;
    }
  }
  return { text, finish };
}

async function write(attempt, destination, text, extra = {}) {
  const posted = await fetch(`${proxy}/.tracestore/destinations`, {
    method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ attempt, destination, text, ...extra }),
  });
  if (!posted.ok) throw new Error(`${destination}: ${posted.status} ${await posted.text()}`);
}

const out = {};
if (mode === "stop") {
  const controller = new AbortController();
  const { stream, attempt } = await open({ "X-Tracestore-Trace": "t7" }, controller.signal);
  const shown = await untilFirstText(stream, controller);
  if (shown) await write(attempt, "ui", shown, { cut_off: true });
  Object.assign(out, { attempt, shown });
} else if (mode === "stop_then_retry") {
  const controller = new AbortController();
  const old = await open({ "X-Tracestore-Trace": "t8", "X-Tracestore-Attempt": "old" },
                         controller.signal);
  const oldText = await untilFirstText(old.stream, controller);
  const retry = await open({ "X-Tracestore-Trace": "t8", "X-Tracestore-Retry-Of": old.attempt });
  const { text, finish } = await readAll(retry.stream);
  if (finish === "stop") {  // only a complete answer is shown and kept
    await write(retry.attempt, "ui", text);
    await write(retry.attempt, "history", text);
  }
  Object.assign(out, { old: old.attempt, oldText, attempt: retry.attempt, text, finish });
} else {
  throw new Error(`unknown mode ${mode}`);
}
console.log(JSON.stringify(out));
