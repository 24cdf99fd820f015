'use strict';
// rttlab route contract (see apps/README.md) on Node.js's plain http module
// with node-pg. One pooled connection, kept open for the life of the process,
// so every route pays exactly its statements' round trips and nothing else.

const http = require('http');
const { URL } = require('url');
const pg = require('pg');

const MAX_SERIAL = 1000;
const port = parsePort(process.env.PORT);

// The pool reads PGHOST, PGPORT, PGUSER, PGPASSWORD and PGDATABASE from the
// environment (libpq names). One connection: the study drives one client.
const pool = new pg.Pool({
  max: 1,
  idleTimeoutMillis: 0, // never close the idle connection
  keepAlive: true,
  connectionTimeoutMillis: 10000,
});
pool.on('error', (err) => {
  // An idle client lost its connection; the pool replaces it on next use.
  console.error(`rttlab-node: idle database connection failed: ${err.message}`);
});

function parsePort(value) {
  if (value === undefined || value === '') return 8080;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 65535) {
    throw new Error(`PORT ${JSON.stringify(value)} is not a port number 1-65535`);
  }
  return n;
}

class HttpError extends Error {
  constructor(status, message, headers = {}) {
    super(message);
    this.status = status;
    this.headers = headers;
  }
}

function send(res, status, body, headers = {}) {
  const data = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(data),
  });
  res.end(data);
}

// readerAccount runs statement 1 of both feed routes.
async function readerAccount(client) {
  const r = await client.query('SELECT id, name FROM accounts WHERE name = $1', ['reader']);
  if (r.rows.length === 0) {
    throw new HttpError(500, 'account "reader" is missing: is the database seeded?');
  }
  return { id: r.rows[0].id, name: r.rows[0].name };
}

// accountArticles runs statement 2 of both feed routes.
async function accountArticles(client, accountId) {
  const r = await client.query(
    'SELECT id, title FROM articles WHERE account_id = $1 ORDER BY id',
    [accountId],
  );
  return r.rows.map((row) => ({ id: row.id, title: row.title, feedback: 0 }));
}

// feed: 3 statements, the feedback counted in one grouped query.
async function feed(client) {
  const account = await readerAccount(client);
  const articles = await accountArticles(client, account.id);
  const ids = articles.map((a) => a.id);
  const r = await client.query(
    'SELECT article_id, count(*) AS n FROM feedback WHERE article_id = ANY($1) GROUP BY article_id',
    [ids],
  );
  const counts = new Map(r.rows.map((row) => [row.article_id, Number(row.n)]));
  for (const a of articles) a.feedback = counts.get(a.id) || 0;
  return { account, articles };
}

// feedNaive: 2 + one count per article (12 statements for the seed).
async function feedNaive(client) {
  const account = await readerAccount(client);
  const articles = await accountArticles(client, account.id);
  for (const a of articles) {
    const r = await client.query('SELECT count(*) AS n FROM feedback WHERE article_id = $1', [a.id]);
    a.feedback = Number(r.rows[0].n);
  }
  return { account, articles };
}

function parseN(params) {
  const all = params.getAll('n');
  if (all.length === 0) throw new HttpError(400, 'query parameter n is missing (0-1000)');
  if (all.length > 1) throw new HttpError(400, `query parameter n is given ${all.length} times`);
  const raw = all[0];
  if (!/^[0-9]+$/.test(raw)) throw new HttpError(400, `n ${JSON.stringify(raw)} is not a non-negative integer`);
  const n = Number(raw);
  if (n > MAX_SERIAL) throw new HttpError(400, `n ${raw} is above ${MAX_SERIAL}`);
  return n;
}

// serial: n sequential SELECT 1, each waiting for the one before.
async function serial(client, n) {
  for (let i = 0; i < n; i++) {
    await client.query('SELECT 1');
  }
  return { n };
}

// withClient leases the pool's connection for one request; a connection
// that failed mid-request is destroyed rather than handed back.
async function withClient(fn) {
  const client = await pool.connect();
  try {
    const out = await fn(client);
    client.release();
    return out;
  } catch (err) {
    client.release(err instanceof HttpError ? undefined : err);
    throw err;
  }
}

const ROUTES = new Set(['/health', '/feed', '/feed-naive', '/serial']);

async function route(req, url) {
  if (!ROUTES.has(url.pathname)) throw new HttpError(404, `no route ${url.pathname}`);
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    throw new HttpError(405, `method ${req.method} not allowed on ${url.pathname}`, { Allow: 'GET, HEAD' });
  }
  switch (url.pathname) {
    case '/health':
      return { status: 'ok' };
    case '/feed':
      return withClient(feed);
    case '/feed-naive':
      return withClient(feedNaive);
    case '/serial': {
      const n = parseN(url.searchParams);
      return withClient((client) => serial(client, n));
    }
    default:
      throw new HttpError(404, `no route ${url.pathname}`);
  }
}

const server = http.createServer((req, res) => {
  let url;
  try {
    url = new URL(req.url, 'http://app');
  } catch (err) {
    send(res, 400, { error: `bad request target: ${err.message}` });
    return;
  }
  route(req, url).then(
    (body) => send(res, 200, body),
    (err) => {
      if (err instanceof HttpError) {
        send(res, err.status, { error: err.message }, err.headers);
        return;
      }
      console.error(`rttlab-node: ${url.pathname}: ${err.message}`);
      send(res, 500, { error: `${url.pathname}: ${err.message}` });
    },
  );
});
// The load client keeps its connection open between requests.
server.keepAliveTimeout = 75000;
server.headersTimeout = 80000;

const CONNECT_WAIT_MS = 60000;

// waitForDatabase opens the pool's connection before the server listens, so
// no measured request pays the connect; the database may still be starting,
// so failures are retried for CONNECT_WAIT_MS.
async function waitForDatabase() {
  const deadline = Date.now() + CONNECT_WAIT_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      const client = await pool.connect();
      client.release();
      console.log(`rttlab-node: database reachable after ${attempt} attempt(s)`);
      return;
    } catch (err) {
      if (Date.now() >= deadline) {
        throw new Error(`database not reachable within ${CONNECT_WAIT_MS / 1000} s: ${err.message}`);
      }
      if (attempt === 1 || attempt % 10 === 0) {
        console.log(`rttlab-node: waiting for database (attempt ${attempt}): ${err.message}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

waitForDatabase().then(
  () => {
    server.listen(port, '0.0.0.0', () => {
      console.log(`rttlab-node: listening on :${port}`);
    });
  },
  (err) => {
    console.error(`rttlab-node: ${err.message}`);
    process.exitCode = 1;
    pool.end();
  },
);

function shutdown(signal) {
  console.log(`rttlab-node: ${signal}, shutting down`);
  server.close();
  server.closeAllConnections();
  pool.end().finally(() => process.exit(0));
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
