"""tests/e2e/services.py - PostgreSQL, memcached and HAProxy under their shipped profiles.

Debian's real packages, each started as root the way its unit or an
administrator starts it, on a private port or socket with every file in the
suite's temporary directory:

    tunerun postgresql -- postgres -D DIR -k DIR -p 15432 -c listen_addresses=
    tunerun memcached -- memcached -u memcache -p 11411 -l 127.0.0.1 -c 4096
    tunerun memcached -- memcached ... -p 11412 -t 3       (threads the user chose)
    tunerun haproxy -- haproxy -Ws -f haproxy.cfg          (master-worker, as Debian's unit)

Each is then checked from outside: it serves (psql, memcached's text
protocol, an HTTP request proxied to a local backend), and every process of
it has the planned CPUs, memory policy, THP mode and limits. On top:

- PostgreSQL: the postmaster has the profile's oom_score_adj and runs as
  the profile's user, and every process it forks (a client backend
  included) is back at 0 through PG_OOM_ADJUST_FILE/VALUE. Lowering a score
  below 0 needs CAP_SYS_RESOURCE: where this root lacks it (a container, this
  CI), the suite raises its own child's score to 500 first and asks for 200,
  which a process may always lower to, so that the same path is proven.
- memcached: `stats` says as many threads as the placed CPUs, from the
  profile's [args]; with -t on the command line, that many, and the plan
  says it left -t alone.
- HAProxy: `show info` says as many threads (Nbthread) as the placed CPUs,
  which HAProxy 2.6 counts from its affinity.

`tunerun ps` lists all four launches, `tunerun doctor postgresql` audits the
cluster's data directory, and each stops as its unit stops it and leaves no
claim.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess

import metrics
from common import (TUNERUN, check, children, cpu_set, equal, expect_placed, run, status, stopped,
                    wait_for)

PG_BIN = "/usr/lib/postgresql/15/bin"
PG_PORT, MC_PORT, MC3_PORT, HAPROXY_PORT, WEB_PORT = 15432, 11411, 11412, 18090, 18091
NEEDED = [f"{PG_BIN}/postgres", f"{PG_BIN}/initdb", "psql", "memcached", "haproxy",
          "runuser"] + metrics.NEEDED
CAP_SYS_RESOURCE = 24


def has_cap(pid, cap):
    return int(status(pid, "CapEff") or "0", 16) >> cap & 1 == 1


def oom_score_adj(pid):
    try:
        with open(f"/proc/{pid}/oom_score_adj") as f:
            return int(f.read())
    except OSError:
        return None


def uid(pid):
    line = status(pid, "Uid")
    return int(line.split()[0]) if line else None


def memcached_say(port, request):
    """What memcached answers to request (text protocol), up to its closing END."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(request)
        data = b""
        while not data.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return data.decode()


def memcached_stats(port):
    """memcached's `stats`, as {name: value}."""
    lines = memcached_say(port, b"stats\r\n").splitlines()
    return {w[1]: w[2] for w in (l.split() for l in lines) if len(w) == 3}


def haproxy_info(sock):
    """HAProxy's `show info` on its stats socket, as {name: value}."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(sock)
        s.sendall(b"show info\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return dict(l.split(": ", 1) for l in data.decode().splitlines() if ": " in l)


def the_claim(env, profile, pid):
    held = [c for c in env.claims(profile) if pid in {p["pid"] for p in c["processes"]}]
    return held[0] if len(held) == 1 else None


def postgresql(env):
    """The postmaster and its backends: placed, the postmaster safe from the OOM killer, and
    the backends back at 0. Returns the postmaster's Popen and the open psql session."""
    tmp = env.tmp
    base, data = os.path.join(tmp, "pg"), os.path.join(tmp, "pg", "data")
    os.makedirs(base)
    shutil.chown(base, "postgres", "postgres")
    # postgres refuses to run as root: initdb as the user the profile drops to
    r = run(["runuser", "-u", "postgres", "--", f"{PG_BIN}/initdb", "-D", data, "-A", "trust",
             "-U", "postgres"])
    if not check("postgresql: initdb makes a cluster as postgres", r.returncode == 0,
                 r.stdout[-800:], r.stderr[-800:]):
        return None, None
    # ALTER SYSTEM's file, over initdb's postgresql.conf, as doctor must read it (doctor())
    auto = os.path.join(data, "postgresql.auto.conf")
    with open(auto, "a") as f:
        f.write("shared_buffers = '96MB'\n")
    # PostgreSQL's own count of the huge pages that takes, asked with the server stopped
    r = run(["runuser", "-u", "postgres", "--", f"{PG_BIN}/postgres", "-D", data, "-C",
             "shared_memory_size_in_huge_pages"])
    env.pg_huge_pages = int(r.stdout) if r.returncode == 0 and r.stdout.strip().isdigit() else None
    check("postgresql: postgres -C shared_memory_size_in_huge_pages counts its huge pages",
          env.pg_huge_pages, r.stdout[-400:], r.stderr[-400:])
    if has_cap(os.getpid(), CAP_SYS_RESOURCE):
        want_oom, opts, raise_first = -1000, [], None
    else:
        # Without CAP_SYS_RESOURCE no score may go below 0: start the launch at 500 and
        # ask for 200, which is lower and so proves the step, as -1000 would with it.
        def raise_first():
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("500")
        want_oom, opts = 200, ["--set", "memory.oom_score_adj=200"]
        print("# this root lacks CAP_SYS_RESOURCE: the postmaster is asked for oom_score_adj "
              "200 from 500, not -1000")
    # no autovacuum: its workers come and go, and one gone between listing the children
    # and reading them would fail a check for nothing
    pm = env.start("postgresql", "postgresql", [
        f"{PG_BIN}/postgres", "-D", data, "-k", base, "-p", str(PG_PORT), "-c",
        "listen_addresses=", "-c", "autovacuum=off"], opts=opts, preexec_fn=raise_first)
    psql = ["psql", "-h", base, "-p", str(PG_PORT), "-U", "postgres", "-d", "postgres", "-At"]
    up = wait_for("postgresql", lambda: run(psql + ["-c", "select 1"]).stdout.strip() == "1",
                  timeout=120)
    if not check("postgresql: postgres -D DIR runs under tunerun postgresql, and psql -c 'select 1' "
                 "answers 1", up, env.log("postgresql")):
        return pm, None
    # a session held open, so that its backend is there to look at
    session = subprocess.Popen(psql, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    session.stdin.write("select pg_backend_pid();\n")
    session.stdin.flush()
    backend = int(session.stdout.readline())
    forked = children(pm.pid)
    check("postgresql: the client's backend is a child of the postmaster", backend in forked,
          f"backend {backend}, children {forked}")
    expect_placed(env, "postgresql", "postgresql", [pm.pid] + forked, "never")
    equal(f"postgresql: the postmaster's oom_score_adj is {want_oom}", oom_score_adj(pm.pid),
          want_oom)
    scores = {p: oom_score_adj(p) for p in forked}
    check("postgresql: ... and every process it forks, the backend included, is back at 0 "
          "(PG_OOM_ADJUST_FILE and PG_OOM_ADJUST_VALUE)",
          forked and set(scores.values()) == {0}, scores)
    pg_uid = int(run(["id", "-u", "postgres"]).stdout)
    equal("postgresql: it runs as the profile's user, postgres",
          {uid(p) for p in [pm.pid] + forked}, {pg_uid})
    return pm, session


def memcached(env):
    """memcached's threads from the placement, and a -t of the user's left alone."""
    base = ["memcached", "-u", "memcache", "-l", "127.0.0.1", "-c", "4096", "-U", "0"]
    mc = env.start("memcached", "memcached", base + ["-p", str(MC_PORT)], opts=["-v"])
    up = wait_for("memcached", lambda: memcached_stats(MC_PORT).get("pid") == str(mc.pid))
    if not check("memcached: runs under tunerun memcached, as the pid tunerun had, and answers "
                 "stats", up, env.log("memcached")):
        return
    check("memcached: serves a set and a get", "VALUE tunerun 0 6\r\nplaced\r\n" in
          memcached_say(MC_PORT, b"set tunerun 0 0 6\r\nplaced\r\nget tunerun\r\n"), env.log("memcached"))
    claim = the_claim(env, "memcached", mc.pid)
    ncpus = len(cpu_set(claim["cpus"])) if claim else 0
    check(f"memcached: the plan added -t {ncpus}, the placed CPUs",
          f"args: added -t {ncpus} (" in env.log("memcached"), env.log("memcached"))
    equal("memcached: ... and stats says as many worker threads", memcached_stats(MC_PORT).get(
          "threads"), str(ncpus))
    # memcached sets both file limits to -c itself; the profile's hard limit lets it
    expect_placed(env, "memcached", "memcached", [mc.pid], "madvise", want_nofile=(4096, 4096))

    mc3 = env.start("memcached-t3", "memcached", base + ["-p", str(MC3_PORT), "-t", "3"],
                    opts=["-v"])
    up = wait_for("memcached -t 3", lambda: memcached_stats(MC3_PORT).get("pid") == str(mc3.pid))
    if not check("memcached -t 3: runs under tunerun memcached", up, env.log("memcached-t3")):
        return
    equal("memcached -t 3: stats says the user's 3 threads", memcached_stats(MC3_PORT).get(
          "threads"), "3")
    check("memcached -t 3: ... and the plan says it left -t to the command",
          "args: -t not added: the command passes -t 3 itself (" in env.log("memcached-t3"),
          env.log("memcached-t3"))


def haproxy(env):
    """HAProxy proxies a request, with as many threads as placed CPUs."""
    tmp = env.tmp
    www, sock = os.path.join(tmp, "www"), os.path.join(tmp, "haproxy.sock")
    os.makedirs(www)
    with open(os.path.join(www, "hello.txt"), "w") as f:
        f.write("proxied by haproxy under tunerun\n")
    # the backend: a plain HTTP server, in a session of its own for the suite's cleanup
    env.procs["web"] = subprocess.Popen(
        ["python3", "-m", "http.server", str(WEB_PORT), "--bind", "127.0.0.1", "--directory", www],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    cfg = os.path.join(tmp, "haproxy.cfg")
    with open(cfg, "w") as f:
        f.write(f"""global
    stats socket {sock} mode 600 level admin
    user haproxy
    group haproxy
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend in
    bind 127.0.0.1:{HAPROXY_PORT}
    default_backend web
backend web
    server web 127.0.0.1:{WEB_PORT}
""")
    hp = env.start("haproxy", "haproxy", ["haproxy", "-Ws", "-f", cfg])
    url = f"http://127.0.0.1:{HAPROXY_PORT}/hello.txt"
    up = wait_for("haproxy", lambda: run(["curl", "-fsS", url]).stdout ==
                  "proxied by haproxy under tunerun\n")
    if not check("haproxy: haproxy -Ws runs under tunerun haproxy, and proxies curl's request to "
                 "its backend", up, env.log("haproxy")):
        return
    info = haproxy_info(sock)
    claim = the_claim(env, "haproxy", hp.pid)
    ncpus = len(cpu_set(claim["cpus"])) if claim else 0
    equal(f"haproxy: show info says Nbthread {ncpus}, the placed CPUs ({claim and claim['cpus']})",
          info.get("Nbthread"), str(ncpus))
    workers = children(hp.pid)
    check("haproxy: the master and its worker", len(workers) == 1, workers)
    # HAProxy raises its soft limit to what its maxconn needs, within the hard one
    expect_placed(env, "haproxy", "haproxy", [hp.pid] + workers, "system", want_nofile="hard")
    hp_uid = int(run(["id", "-u", "haproxy"]).stdout)
    equal("haproxy: its worker dropped to the user haproxy.cfg names", [uid(w) for w in workers],
          [hp_uid])


def doctor(env):
    """`tunerun doctor postgresql` on the cluster's data directory: each finding the issue
    names, with a fix where it warns."""
    data = os.path.join(env.tmp, "pg", "data")
    r = run([TUNERUN, "doctor", "postgresql", "--data-dir", data, "--json"])
    try:
        found = {f["id"]: f for f in json.loads(r.stdout)["findings"]}
    except (ValueError, KeyError):
        found = {}
    for fid in ("thp.enabled", "vm.overcommit_memory", "vm.dirty", "vm.nr_hugepages"):
        f = found.get(fid)
        check(f"doctor postgresql: a {fid} finding, with the fix where it is not ok",
              f and (f["severity"] in ("ok", "info") or f["fix"]["runtime"]), r.stdout[-1500:],
              r.stderr[-500:])
    hp = found.get("vm.nr_hugepages", {})
    check("doctor postgresql: ... huge pages counted against the cluster's shared_buffers, as "
          "postgresql.auto.conf sets it over postgresql.conf",
          f"{data}'s shared_buffers = 96MB ({data}/postgresql.conf, {data}/postgresql.auto.conf)"
          in hp.get("observed", ""), hp)
    fix = (hp.get("fix") or {}).get("runtime") or ""
    said = re.search(r"sysctl -w vm\.nr_hugepages=(\d+)$", fix)  # "on the host, ..." in a container
    count = int(said.group(1)) if said else 0
    want = getattr(env, "pg_huge_pages", None) or 0
    check(f"doctor postgresql: ... its fix, {count} pages, is never fewer than PostgreSQL's own "
          f"count ({want}) and at most a tenth more", want and want <= count <= want * 1.1 + 2,
          fix, hp)


def scenario(env):
    pm, session = postgresql(env)
    memcached(env)
    haproxy(env)
    listed = sorted(c["profile"] for c in env.ps()["claims"])
    equal("ps: lists all three services (memcached twice)", listed,
          ["haproxy", "memcached", "memcached", "postgresql"])
    metrics.scrape(env, listed)
    doctor(env)

    # --- stop, each as its unit would, and no claim stays ---------------------------------
    if session:
        session.stdin.close()
        session.wait(30)
    if pm:
        # pg_ctlcluster's stop (-m fast): SIGINT
        stopped(env, "postgresql", "postgresql", lambda: os.kill(pm.pid, signal.SIGINT))
    for name in ("memcached", "memcached-t3"):
        if name in env.procs:
            stopped(env, name, name, lambda: env.procs[name].send_signal(signal.SIGTERM))
    if "haproxy" in env.procs:
        # a soft stop (SIGUSR1): the master waits for its worker to finish and exits 0
        stopped(env, "haproxy", "haproxy", lambda: env.procs["haproxy"].send_signal(signal.SIGUSR1))
    equal("ps: no claim stays once they stopped", env.ps()["claims"], [])
