"""tests/e2e/common.py - what the end-to-end suites share: TAP-style results, reading a
service's processes from /proc, starting it under tunerun, and checking it against its claim
and profile from outside (expect_placed()).
"""

import json
import os
import re
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TUNERUN = os.path.join(ROOT, "tunerun")

passed = failed = 0  # read them as common.passed: a name imported from here is a copy


def ok(name):
    global passed
    passed += 1
    print(f"ok - {name}")


def not_ok(name, *lines):
    global failed
    failed += 1
    print(f"not ok - {name}")
    for line in lines:
        for part in str(line).splitlines() or [""]:
            print(f"#   {part}")


def check(name, cond, *why):
    (ok if cond else not_ok)(name, *([] if cond else why))
    return cond


def equal(name, got, want):
    return check(name, got == want, f"got:  {got!r}", f"want: {want!r}")


def cpu_set(text):
    """'0-2,5' -> {0, 1, 2, 5}"""
    out = set()
    for part in filter(None, (text or "").strip().split(",")):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def status(pid, key, tid=None):
    path = f"/proc/{pid}/task/{tid}/status" if tid else f"/proc/{pid}/status"
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def threads(pid):
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def nofile(pid):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return soft, hard
    return None


def memory_policy(pid):
    """The process's memory policy as /proc/PID/numa_maps shows it (its first mapping's,
    which is the task's own when the mapping has none): ("bind", {0}), ("local", set())."""
    try:
        with open(f"/proc/{pid}/numa_maps") as f:
            field = f.readline().split()[1]
    except (OSError, IndexError):
        return None
    mode, _, nodes = field.partition(":")
    return mode, cpu_set(nodes)


NUMA_MAPS_MODE = {"bind": "bind", "preferred": "prefer", "preferred-many": "prefer (many)",
                  "interleave": "interleave", "local": "local"}


def environ(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        items = [e.decode(errors="replace") for e in f.read().split(b"\0") if e]
    return dict(e.split("=", 1) for e in items if "=" in e)


def memory_cgroup(pid):
    with open(f"/proc/{pid}/cgroup") as f:
        lines = f.read().splitlines()
    for line in lines:
        num, ctl, path = line.split(":", 2)
        if "memory" in ctl.split(","):
            return path
    return next((l.split(":", 2)[2] for l in lines if l.startswith("0::")), None)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def wait_for(what, fn, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if fn():
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


class Env:
    def __init__(self, tmp, state="state", procs=None):
        self.tmp = tmp
        self.state = os.path.join(tmp, state)
        self.procs = {} if procs is None else procs  # name -> Popen of `tunerun ... -- service`
        self.hard_nofile = int(run(["sh", "-c", "ulimit -Hn"]).stdout.strip())

    def start(self, name, profile, argv, opts=(), **kw):
        log = open(os.path.join(self.tmp, f"{name}.log"), "w")
        # a session of its own: on failure the whole group goes, nginx's workers included
        p = subprocess.Popen([TUNERUN, "--state-dir", self.state, *opts, profile, "--"] + argv,
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **kw)
        self.procs[name] = p
        return p

    def log(self, name):
        try:
            return open(os.path.join(self.tmp, f"{name}.log")).read()
        except OSError:
            return ""

    def ps(self):
        r = run([TUNERUN, "--state-dir", self.state, "ps", "--json"])
        if r.returncode != 0:
            raise RuntimeError(f"tunerun ps failed ({r.returncode}): {r.stderr.strip()}")
        return json.loads(r.stdout)

    def claims(self, profile):
        return [c for c in self.ps()["claims"] if c["profile"] == profile]


# Services that write their process title over their environment block, so
# that /proc/PID/environ shows none of it: nginx (see nginx_exec_environment()
# in run) and PostgreSQL (ps_status.c clobbers argv and environ on Linux).
TITLE_OVER_ENVIRON = {"nginx", "postgresql"}


def expect_placed(env, label, profile, pids, want_thp, want_nofile=None):
    """
    Every process and thread of the service, from outside, against its claim
    and profile. want_thp: "never", "madvise" or "system". want_nofile: None
    for the profile's soft limit (within the hard one this root may not
    raise), "hard" for the hard limit alone (a service that sets its soft one
    itself), or a (soft, hard) pair the service sets both to.
    """
    claims = env.claims(profile)
    held = [c for c in claims if set(pids) <= {p["pid"] for p in c["processes"]}]
    if not check(f"{label}: tunerun ps lists it with every one of its processes", len(held) == 1,
                 f"pids {pids}", json.dumps(claims, indent=1)):
        return None
    claim = held[0]
    cpus, mems = cpu_set(claim["cpus"]), cpu_set(claim["mem_nodes"])
    bad = [(pid, tid, status(pid, "Cpus_allowed_list", tid)) for pid in pids for tid in threads(pid)
           if not cpu_set(status(pid, "Cpus_allowed_list", tid)) <= cpus]
    check(f"{label}: every thread of every process runs on its CPUs ({claim['cpus']})", not bad,
          *[f"pid {p} tid {t}: Cpus_allowed_list {c}" for p, t, c in bad])
    # tunerun sets a memory policy; Mems_allowed is the cpuset's, which it leaves alone
    mems_seen = {pid: status(pid, "Mems_allowed_list") for pid in pids}
    equal(f"{label}: Mems_allowed is the cpuset's, as it was ({OWN_MEMS})",
          set(mems_seen.values()), {OWN_MEMS})
    want_policy = (NUMA_MAPS_MODE[claim["mpol"]], set() if claim["mpol"] == "local" else mems)
    policies = {pid: memory_policy(pid) for pid in pids}
    check(f"{label}: memory policy {claim['mpol']} {claim['mem_nodes']} (numa_maps)",
          all(p == want_policy for p in policies.values()), policies, f"want {want_policy}")
    want = min(int(PROFILE_NOFILE[profile]), env.hard_nofile)
    limits = {pid: nofile(pid) for pid in pids}
    if want_nofile is None:
        check(f"{label}: nofile soft limit {want} (the profile's {PROFILE_NOFILE[profile]}, "
              f"within the hard limit {env.hard_nofile} this root may not raise)",
              all(l and int(l[0]) == want for l in limits.values()), limits)
    elif want_nofile == "hard":
        check(f"{label}: nofile hard limit {want} (the profile's {PROFILE_NOFILE[profile]}, "
              f"within the {env.hard_nofile} this root may not raise), the soft one its own",
              all(l and int(l[1]) == want and int(l[0]) <= want for l in limits.values()), limits)
    else:
        equal(f"{label}: nofile {want_nofile[0]}:{want_nofile[1]}, as the service sets it "
              f"within the profile's hard limit", set(limits.values()),
              {(str(want_nofile[0]), str(want_nofile[1]))})
    arena = PROFILE_ARENA[profile]
    if arena == "auto":  # one arena per placed CPU, never fewer than 2
        arena = str(max(2, len(cpus)))
    if profile not in TITLE_OVER_ENVIRON:
        envs = {pid: environ(pid) for pid in pids}
        check(f"{label}: MALLOC_ARENA_MAX {arena or 'left unset'} in its environment",
              all(e.get("MALLOC_ARENA_MAX") == arena for e in envs.values()),
              {p: e.get("MALLOC_ARENA_MAX") for p, e in envs.items()})
        check(f"{label}: no HWLOC_* of tunerun's reaches it",
              not any(k.startswith("HWLOC_") for e in envs.values() for k in e), "")
    thp = {pid: status(pid, "THP_enabled") for pid in pids}
    if want_thp == "never":
        equal(f"{label}: THP never (THP_enabled 0 in status)", set(thp.values()), {"0"})
    elif want_thp == "madvise":
        # PR_THP_DISABLE_EXCEPT_ADVISED (6.18) leaves THP_enabled 1: madvised memory gets them
        equal(f"{label}: THP madvise (THP_enabled 1 in status: madvised memory gets them)",
              set(thp.values()), {"1"})
    else:
        equal(f"{label}: THP left to the system (THP_enabled 1 in status)", set(thp.values()),
              {"1"})
    cgs = {pid: memory_cgroup(pid) for pid in pids}
    child = CGROUP_CHILD.get(profile)
    if child and CGROUP_WRITABLE:
        check(f"{label}: its memory cgroup is tunerun's child for its swap policy ({child})",
              all(c == f"{OWN_CGROUP.rstrip('/')}/{child}" for c in cgs.values()), cgs)
    elif not child:
        check(f"{label}: no swap policy, so it stays in the memory cgroup it was started in",
              all(c == OWN_CGROUP for c in cgs.values()), cgs, f"started in {OWN_CGROUP}")
    return claim


def stopped(env, label, name, stop, timeout=60):
    p = env.procs[name]
    stop()
    try:
        code = p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        code = "timeout"
    equal(f"{label}: stops cleanly (exit status 0)", code, 0)


def pids_of_claim(env, profile, port_pidfile=None):
    out = []
    for c in env.claims(profile):
        out.extend(p["pid"] for p in c["processes"])
    return out


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def read_profile(name):
    """The shipped profile's nofile and malloc_arena_max (its includes' where it has none)."""
    text = open(os.path.join(ROOT, "profiles", f"{name}.ini")).read()
    nof = re.search(r"^nofile\s*=\s*(\d+)", text, re.M)
    arena = re.search(r"^malloc_arena_max\s*=\s*(\S+)", text, re.M)
    inc = re.search(r"^include\s*=\s*(\S+)", text, re.M)
    base = read_profile(inc.group(1)) if inc and not (nof and arena) else (None, None)
    nof = nof.group(1) if nof else base[0]
    arena = (None if arena.group(1) == "unset" else arena.group(1)) if arena else base[1]
    return nof, arena


PROFILE_NOFILE, PROFILE_ARENA = {}, {}
for _p in ("redis", "nginx", "mariadb", "postgresql", "memcached", "haproxy"):
    PROFILE_NOFILE[_p], PROFILE_ARENA[_p] = read_profile(_p)
CGROUP_WRITABLE = False
CGROUP_CHILD = {}
OWN_CGROUP = memory_cgroup(os.getpid())
# where each launch makes its own cpuset cgroup: v1's cpuset hierarchy, or the cgroup2 one
if os.path.isdir("/sys/fs/cgroup/cpuset"):
    with open("/proc/self/cpuset") as f:
        OWN_CPUSET_DIR = "/sys/fs/cgroup/cpuset" + f.read().strip().rstrip("/")
else:
    OWN_CPUSET_DIR = "/sys/fs/cgroup" + (OWN_CGROUP or "").rstrip("/")
OWN_MEMS = status(os.getpid(), "Mems_allowed_list")
