// The job queue of the kill test and of the benchmark: BullMQ's Queue.add
// and a Worker, as its README shows them, with BullMQ's own options for
// lock lifetimes, pointed at one Redis address. One role per process:
//
//   node queue.js produce HOST:PORT QUEUE N
//       adds jobs job-0 … job-(N-1) (custom ids, so a retried add finds
//       the job it added before rather than adding a second), each retried
//       on error until acknowledged; prints {"added":N,"retries":…}.
//   node queue.js work HOST:PORT QUEUE FILE CONCURRENCY SLEEP_MS
//       a Worker that, for each job it processes, appends "run <jobId>"
//       to FILE (one line, O_APPEND) and sleeps SLEEP_MS; each job its
//       stalled check put back appends "stalled <jobId>". It works until
//       SIGTERM, then closes and exits 0.
//   node queue.js check HOST:PORT QUEUE N
//       prints each job's state and stalled counter (BullMQ's "stc": how
//       often the job's lock expired while it was active and the job was
//       put back to wait): {"completed":…,"pending":[…],"stalled":{…}}.
//   node queue.js bench HOST:PORT QUEUE N CONCURRENCY
//       adds N jobs (CONCURRENCY adds in flight) while a Worker of
//       CONCURRENCY processes them (a no-op); prints the rate from the
//       first add to the last completion: {"jobs":N,"ms":…,"perSecond":…}.
//
// Every role is bounded in time (IDEMGATE_BULLMQ_DEADLINE_MS, 120 s by
// default) and exits 1, saying why, past it.
'use strict';
const fs = require('fs');
const { Queue, Worker } = require('bullmq');

const [role, addr, queueName] = process.argv.slice(2, 5);
const args = process.argv.slice(5);
const [host, port] = (addr || '').split(':');
const connection = { host, port: Number(port) };
const deadline = Date.now() + Number(process.env.IDEMGATE_BULLMQ_DEADLINE_MS || 120000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The lock lifetimes of the kill test: a job whose worker stops extending
// its lock (its node died, its connection broke) is found stalled and put
// back within about 15 s, not BullMQ's default 30 s plus 30 s; it
// completes in the end however often that happens. (4 s locks expired
// under a loaded machine's delays, with no kill.)
const workerOptions = {
  connection,
  lockDuration: 10000,
  stalledInterval: 5000,
  maxStalledCount: 1000,
};

function fail(why) {
  console.log(JSON.stringify({ ok: false, why }));
  process.exit(1);
}

async function produce(n) {
  const queue = new Queue(queueName, { connection });
  let retries = 0;
  const errors = {};
  queue.on('error', (err) => { errors[err.message] = (errors[err.message] || 0) + 1; });
  let next = 0;
  const one = async () => {
    while (next < n) {
      const i = next++;
      for (;;) {
        try {
          const job = await queue.add('job', { i }, { jobId: `job-${i}` });
          if (job.id !== `job-${i}`) fail(`added job-${i}, got id ${job.id}`);
          break;
        } catch (err) {
          retries++;
          errors[err.message] = (errors[err.message] || 0) + 1;
          if (Date.now() > deadline) fail(`job-${i} not added before the deadline: ${err.message}`);
          await sleep(100);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, one));
  await queue.close();
  return { added: n, retries, errors };
}

async function work(file, concurrency, sleepMs) {
  const fd = fs.openSync(file, 'a');
  const worker = new Worker(queueName, async (job) => {
    fs.writeSync(fd, `run ${job.id}\n`);
    await sleep(sleepMs);
    return job.id;
  }, { ...workerOptions, concurrency });
  worker.on('stalled', (jobId) => fs.writeSync(fd, `stalled ${jobId}\n`));
  const errors = {};
  worker.on('error', (err) => { errors[err.message] = (errors[err.message] || 0) + 1; });
  await new Promise((resolve) => {
    process.on('SIGTERM', resolve);
    const t = setInterval(() => { if (Date.now() > deadline) { clearInterval(t); resolve(); } }, 500);
    t.unref();
  });
  // A worker whose node is gone would wait for its connection to close.
  await Promise.race([worker.close(true), sleep(5000)]);
  fs.closeSync(fd);
  return { errors };
}

async function check(n) {
  const queue = new Queue(queueName, { connection });
  queue.on('error', () => {});
  let completed = 0;
  const pending = [];
  const stalled = {};
  for (let i = 0; i < n; i++) {
    const id = `job-${i}`;
    const job = await queue.getJob(id);
    const state = job ? await job.getState() : 'missing';
    if (state === 'completed' && job.returnvalue === id) completed++;
    else pending.push(`${id}:${state}`);
    if (job && job.stalledCounter) stalled[id] = job.stalledCounter;
  }
  await queue.close();
  return { completed, pending: pending.slice(0, 20), pendingCount: pending.length, stalled };
}

async function bench(n, concurrency) {
  const queue = new Queue(queueName, { connection });
  let done = 0;
  let finish;
  const finished = new Promise((r) => { finish = r; });
  const worker = new Worker(queueName, async () => {}, { connection, concurrency });
  worker.on('completed', () => { if (++done === n) finish(); });
  await worker.waitUntilReady();
  const start = process.hrtime.bigint();
  let next = 0;
  const one = async () => {
    while (next < n) {
      next++;
      await queue.add('job', { at: next });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, one));
  const timer = setInterval(() => { if (Date.now() > deadline) fail(`${done} of ${n} jobs done before the deadline`); }, 500);
  await finished;
  clearInterval(timer);
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  await worker.close();
  // In batches of 500 jobs (BullMQ's default is 1000): a script that
  // writes may touch at most scripts.max_keys (4096) keys, and a job is
  // about six.
  await queue.obliterate({ force: true, count: 500 });
  await queue.close();
  return { jobs: n, ms, perSecond: n / (ms / 1000) };
}

const roles = {
  produce: () => produce(Number(args[0])),
  work: () => work(args[0], Number(args[1]), Number(args[2])),
  check: () => check(Number(args[0])),
  bench: () => bench(Number(args[0]), Number(args[1])),
};
if (!roles[role] || !host || !port || !queueName) {
  fail(`usage: node queue.js produce|work|check|bench HOST:PORT QUEUE …, not ${process.argv.slice(2).join(' ')}`);
}
const timer = setTimeout(() => fail(`${role}: not done within the deadline`), deadline - Date.now() + 10000);
roles[role]().then((result) => {
  clearTimeout(timer);
  console.log(JSON.stringify({ ok: true, ...result }));
  process.exit(0);
}, (err) => fail(`${role}: ${err && err.stack}`));
