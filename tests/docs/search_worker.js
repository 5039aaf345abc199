// mkdocs-material's own search worker of a built site, run in node on the site's search index, as the
// search box runs it in a browser: node search_worker.js SITE QUERY... prints {query: [[result, ...], ...]}
// (results grouped by page as the search box shows them, best first).
const fs = require("fs"), path = require("path");
const [site, ...queries] = process.argv.slice(2);
const dir = path.join(site, "assets", "javascripts", "workers");
const worker = fs.readdirSync(dir).find(f => /^search\..*\.min\.js$/.test(f));
let handler = null, pending = null;
globalThis.self = globalThis;
globalThis.addEventListener = (type, fn) => { if (type === "message") handler = fn; };
globalThis.postMessage = msg => { const resolve = pending; pending = null; resolve(msg); };
globalThis.importScripts = () => { throw new Error("importScripts: the site is configured for English only"); };
require(path.resolve(dir, worker));
const ask = data => new Promise(resolve => { pending = resolve; handler({ data }); });
(async () => {
  const index = JSON.parse(fs.readFileSync(path.join(site, "search", "search_index.json"), "utf8"));
  index.options = { suggest: false };  // what the page passes along with the index (search.suggest off)
  await ask({ type: 0, data: index });  // SETUP
  const out = {};
  for (const query of queries) {
    const res = await ask({ type: 2, data: query });  // QUERY
    out[query] = res.data.items.map(group => group.map(d => ({ location: d.location, score: d.score })));
  }
  process.stdout.write(JSON.stringify(out));
})().catch(err => { console.error(err); process.exit(1); });
