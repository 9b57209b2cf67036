// BullMQ's README example, as the README shows it, pointed at one Redis
// address (argv[2], host:port): Queue.add, a Worker, QueueEvents'
// "completed" and "failed", and FlowProducer's tree of a parent, children
// and grandchildren. The only change is the connection each constructor
// is given. It prints one JSON line (what was added, processed and heard)
// and exits 0 when every job completed, each heard once as completed by
// QueueEvents, the flow's parent after all its children; 1 otherwise,
// saying why. The whole run is bounded (argv[3] ms, 60 s by default).
'use strict';
const { Queue, Worker, QueueEvents, FlowProducer } = require('bullmq');

const [host, port] = (process.argv[2] || '127.0.0.1:6379').split(':');
const connection = { host, port: Number(port) };
const deadline = Number(process.argv[3] || 60000);
const cars = 20;

const errors = [];
const note = (where) => (err) => errors.push(`${where}: ${err && err.message}`);

async function main() {
  const painted = [];
  const paintCar = async (color) => {
    painted.push(color);
  };
  const queue = new Queue('Paint', { connection });
  const worker = new Worker('Paint', async (job) => {
    if (job.name === 'cars') {
      await paintCar(job.data.color);
    }
  }, { connection });
  const queueEvents = new QueueEvents('Paint', { connection });
  for (const c of [queue, worker, queueEvents]) c.on('error', note(c.constructor.name));

  const completed = new Set();
  const failed = [];
  queueEvents.on('completed', ({ jobId }) => completed.add(jobId));
  queueEvents.on('failed', ({ jobId, failedReason }) => failed.push(`${jobId}: ${failedReason}`));
  await queueEvents.waitUntilReady();

  // Each node of a cluster runs this in turn, on the same keys.
  const before = (await queue.getJobCounts('completed')).completed;
  const ids = [];
  for (let i = 0; i < cars; i++) {
    const job = await queue.add('cars', { color: i % 2 ? 'blue' : 'red' });
    ids.push(job.id);
  }

  // The flow: a root in one queue, children in a second, grandchildren
  // in a third; each level's worker records the order it ran in.
  const order = [];
  const flowWorkers = ['topQueueName', 'childrenQueueName', 'grandChildrenQueueName'].map((name) => {
    const w = new Worker(name, async (job) => {
      order.push(`${job.name}:${job.data.idx === undefined ? '' : job.data.idx}`);
      if (job.name === 'root-job') return Object.values(await job.getChildrenValues()).length;
      return job.data.foo;
    }, { connection });
    w.on('error', note(`Worker ${name}`));
    return w;
  });
  const flow = new FlowProducer({ connection });
  flow.on('error', note('FlowProducer'));
  const originalTree = await flow.add({
    name: 'root-job',
    queueName: 'topQueueName',
    data: {},
    children: [
      {
        name: 'child-job',
        data: { idx: 0, foo: 'bar' },
        queueName: 'childrenQueueName',
        children: [
          { name: 'grandchild-job', data: { idx: 1, foo: 'bah' }, queueName: 'grandChildrenQueueName' },
          { name: 'grandchild-job', data: { idx: 2, foo: 'baz' }, queueName: 'grandChildrenQueueName' },
        ],
      },
      { name: 'child-job', data: { idx: 3, foo: 'foo' }, queueName: 'childrenQueueName' },
    ],
  });

  const start = Date.now();
  let rootState = '';
  while (Date.now() - start < deadline) {
    rootState = await originalTree.job.getState();
    if (completed.size >= cars && rootState === 'completed') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const counts = await queue.getJobCounts('completed', 'failed', 'wait', 'active', 'delayed');
  const topQueue = new Queue('topQueueName', { connection });
  const root = await topQueue.getJob(originalTree.job.id);
  const result = {
    added: ids.length, painted: painted.length, heard: completed.size, failed,
    counts, flowOrder: order, rootState, rootValue: root && root.returnvalue, errors,
  };
  const why = [];
  if (painted.length !== cars) why.push(`${painted.length} of ${cars} cars painted`);
  if (completed.size !== cars || !ids.every((id) => completed.has(id))) why.push(`QueueEvents heard ${completed.size} of ${cars} completions`);
  if (failed.length) why.push(`failed: ${failed.join('; ')}`);
  if (counts.completed - before !== cars) why.push(`getJobCounts: ${JSON.stringify(counts)}, ${before} completed before`);
  if (rootState !== 'completed') why.push(`the flow's root is ${rootState || 'unknown'}`);
  if (order.length !== 5 || order[4] !== 'root-job:') why.push(`the flow ran in the order ${order.join(', ')}`);
  if (root && root.returnvalue !== 2) why.push(`the root saw ${root && root.returnvalue} children's values, want 2`);
  if (errors.length) why.push(`errors: ${errors.join('; ')}`);
  result.ok = why.length === 0;
  result.why = why;
  await Promise.all([worker.close(), ...flowWorkers.map((w) => w.close())]);
  await Promise.all([queue.close(), topQueue.close(), queueEvents.close(), flow.close()]);
  return result;
}

const timer = setTimeout(() => {
  console.log(JSON.stringify({ ok: false, why: [`not done within ${deadline + 10000} ms`], errors }));
  process.exit(1);
}, deadline + 10000);
main().then((result) => {
  clearTimeout(timer);
  console.log(JSON.stringify(result));
  process.exit(result.ok ? 0 : 1);
}, (err) => {
  clearTimeout(timer);
  console.log(JSON.stringify({ ok: false, why: [`${err && err.stack}`], errors }));
  process.exit(1);
});
