# sum.py DIR LEADER CALLED MODE LABEL: one run of run.sh as a JSON line:
# per operation, each process's CPU (cpu_us, from perf's task-clock) and
# its system calls (sys: all of them; then by name), keyed by role: L the
# leader, F* the follower the clients call, F (and F2 when the clients
# call the leader) the other followers, client the load; and each node's
# VmHWM / VmRSS at the end.
import json
import sys

d, lead, called, mode, label = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
load = open(d + '/load.out').read().split()
ops, errs, rate = int(load[1]), int(load[3]), float(load[5])


def parse(f):
    r = {}
    for line in open(f):
        p = line.strip().split(',')
        if len(p) < 3 or line.startswith('#'):
            continue
        try:
            v = float(p[0])
        except ValueError:
            continue  # <not counted>
        r[p[2].replace('syscalls:sys_enter_', '').replace('raw_syscalls:sys_enter', 'sys')] = v
    return r


roles, others = [], ['F', 'F2']
for i in range(3):
    if i == lead:
        roles.append('L')
    elif i == called:
        roles.append('F*')
    else:
        roles.append(others.pop(0))
rows = {roles[i]: parse(f'{d}/perf.{i}') for i in range(3)}
rows['client'] = parse(d + '/perf.client')
mem = {}
for i in range(3):
    p = open(f'{d}/mem.{i}').read().split()
    mem[roles[i]] = {'hwm_kb': int(p[1]), 'rss_kb': int(p[4])}
out = {'build': label, 'mode': mode, 'ops': ops, 'errors': errs, 'ops_s': rate, 'mem': mem, 'per_op': {}}
for k, r in rows.items():
    out['per_op'][k] = {('cpu_us' if n == 'task-clock' else n): (v * 1000 / ops if n == 'task-clock' else v / ops) for n, v in r.items()}
print(json.dumps(out))
