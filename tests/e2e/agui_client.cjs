// The AG-UI protocol's own TypeScript client (@ag-ui/client's HttpAgent) driving the app's AG-UI
// route, as a CopilotKit front end would: tests/e2e/test_e2e_agui_client.py runs it with node.
// Usage: node agui_client.cjs <tools dir> <url> <function key> <thread id> <run id> <message>
// Prints one JSON line: the events the client received (after its own verification of the event
// sequence, which throws on a protocol violation), the messages it assembled, or the error.
const path = require("node:path");
const [toolsDir, url, key, threadId, runId, message] = process.argv.slice(2);
const { HttpAgent } = require(path.join(toolsDir, "node_modules", "@ag-ui", "client"));

async function main() {
  const agent = new HttpAgent({
    url,
    headers: { "x-functions-key": key },
    threadId,
    initialMessages: [{ id: `user-${runId}`, role: "user", content: message }],
  });
  const events = [];
  try {
    const result = await agent.runAgent({ runId }, { onEvent: ({ event }) => { events.push(event); } });
    console.log(JSON.stringify({ ok: true, events, newMessages: result.newMessages, messages: agent.messages }));
  } catch (error) {
    console.log(JSON.stringify({ ok: false, error: String(error && error.message || error), events }));
  }
}

main();
