// The read from Node.js (18+) with plain fetch: Cohere's /v2/rerank shape, no package.
//
//     # in the root of a checkout of mempursuit, in one shell:
//     pip install -e ".[serve]"
//     mempursuit serve --port 8080
//     # in another:
//     MEMPURSUIT_URL=http://127.0.0.1:8080 node examples/serve_node_fetch.mjs
//
// With `mempursuit serve --token-env VAR`, set MEMPURSUIT_TOKEN to the token.
const url = process.env.MEMPURSUIT_URL ?? "http://127.0.0.1:8080";
const facts = [
  "Alice moved to Lisbon in March for a new robotics job.",
  "Alice relocated to Lisbon in March to start a robotics job.",
  "In March Alice moved to Lisbon, where her new robotics job is.",
  "Alice adopted a grey cat called Pixel.",
  "Alice's sister Maya lives in Porto.",
  "Bob plays the cello in a jazz band.",
];
const headers = {"Content-Type": "application/json"};
if (process.env.MEMPURSUIT_TOKEN) headers.Authorization = `Bearer ${process.env.MEMPURSUIT_TOKEN}`;

const res = await fetch(`${url}/v2/rerank`, {
  method: "POST",
  headers,
  body: JSON.stringify({
    model: "mempursuit",
    query: "When did Alice move to Lisbon and what pet did she adopt?",
    documents: facts,
    top_n: 2,
  }),
});
const body = await res.json();
if (!res.ok) {
  console.error(`error ${res.status}: ${body.message}`);
  process.exit(1);
}
for (const r of body.results) console.log(`  ${r.relevance_score.toFixed(2)}  ${facts[r.index]}`);
