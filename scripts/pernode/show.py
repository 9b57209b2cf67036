# show.py OUT.jsonl: the medians of run.sh's runs, per label and mode:
# per operation, each role's CPU and system calls, the runs' ops/s, the
# nodes' peak VmHWM, and the sum over the processes.
import json
import statistics as st
import sys

runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
by = {}
for r in runs:
    by.setdefault((r['build'], r['mode']), []).append(r)
cols = ['cpu_us', 'sys', 'write', 'read', 'pwrite64', 'fdatasync', 'fsync', 'epoll_pwait', 'futex', 'nanosleep', 'tgkill', 'context-switches']
for (b, m), rs in sorted(by.items()):
    print(f"== {b} {m}: ops/s {[round(x['ops_s']) for x in rs]}, errors {[x['errors'] for x in rs]}")
    print('   ' + f"{'role':7}" + ' '.join(f'{c[:9]:>9}' for c in cols))
    for k in ['F*', 'L', 'F', 'F2', 'client']:
        xs = [x['per_op'][k] for x in rs if k in x['per_op']]
        if xs:
            print(f'   {k:7}' + ' '.join(f"{st.median([x.get(c, 0) for x in xs]):9.2f}" for c in cols))
    hwm = [max(v['hwm_kb'] for v in x['mem'].values()) // 1024 for x in rs]
    cpu = [sum(v.get('cpu_us', 0) for v in x['per_op'].values()) for x in rs]
    sys_ = [sum(v.get('sys', 0) for v in x['per_op'].values()) for x in rs]
    print(f'   all processes: CPU {st.median(cpu):.0f} us/op {sorted(round(c) for c in cpu)}, '
          f'system calls {st.median(sys_):.1f}/op {sorted(round(s, 1) for s in sys_)}; nodes peak VmHWM {hwm} MB')
