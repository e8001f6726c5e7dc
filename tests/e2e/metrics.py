"""tests/e2e/metrics.py - tunerun's metrics as Prometheus gets them, through Debian's real
node_exporter.

While services.py's services run, contrib/systemd/tunerun-metrics.service's own command
(its ExecStart, with the suite's state and textfile directories) writes `tunerun ps
--metrics` into a directory that a prometheus-node-exporter, started on a loopback port
with only its textfile collector, reads. The scrape must hold a series of every running
service, parsed without error by node_exporter itself (node_textfile_scrape_error 0), and
every tunerun metric must have its HELP and TYPE and follow Prometheus's naming rules.
"""

import os
import re
import shutil
import subprocess

from common import ROOT, TUNERUN, check, cpu_set, equal, run, wait_for

EXPORTER = "/usr/bin/prometheus-node-exporter"
EXPORTER_PORT = 19100
NEEDED = [EXPORTER]


def unit_command(textfile, state):
    """tunerun-metrics.service's ExecStart, for this suite's directories and build."""
    text = open(os.path.join(ROOT, "contrib", "systemd", "tunerun-metrics.service")).read()
    cmd = re.search(r"^ExecStart=/bin/sh -c '(.*)'$", text, re.M).group(1)
    return (cmd.replace("/var/lib/prometheus/node-exporter", textfile)
            .replace("/usr/bin/tunerun ps", f"{TUNERUN} --state-dir {state} ps"))


def samples(text):
    """{(name, frozenset(labels)): value} of the exposition's sample lines."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$", line)
        if m:
            labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
            out[(m.group(1), labels)] = float(m.group(4))
    return out


def scrape(env, profiles):
    """Start node_exporter on the textfile directory, write the metrics as the unit does,
    scrape, and find each of profiles' services in what Prometheus would store."""
    textfile = os.path.join(env.tmp, "textfile")
    os.makedirs(textfile)
    r = run(["sh", "-c", unit_command(textfile, env.state)])
    equal("metrics: tunerun-metrics.service's command writes tunerun.prom whole, no temporary "
          "file left", (r.returncode, sorted(os.listdir(textfile))), (0, ["tunerun.prom"]))
    exporter = subprocess.Popen(
        [EXPORTER, f"--web.listen-address=127.0.0.1:{EXPORTER_PORT}",
         "--collector.disable-defaults", "--collector.textfile",
         f"--collector.textfile.directory={textfile}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    env.procs["node-exporter"] = exporter
    url = f"http://127.0.0.1:{EXPORTER_PORT}/metrics"
    up = wait_for("node_exporter", lambda: run(["curl", "-fsS", url]).returncode == 0)
    # and it is this one that answers, not another server on the port
    if not check("metrics: Debian's prometheus-node-exporter serves its textfile collector",
                 up and exporter.poll() is None, exporter.poll()):
        return
    body = run(["curl", "-fsS", url]).stdout
    got = samples(body)
    equal("metrics: node_exporter parsed tunerun.prom without error (node_textfile_scrape_error)",
          got.get(("node_textfile_scrape_error", frozenset())), 0.0)
    equal("metrics: tunerun_services counts the running services",
          got.get(("tunerun_services", frozenset())), float(len(profiles)))
    claims = env.ps()["claims"]
    for prof in sorted(set(profiles)):
        mine = [c for c in claims if c["profile"] == prof]
        info = [k for k in got if k[0] == "tunerun_service_info" and ("profile", prof) in k[1]]
        equal(f"metrics: a tunerun_service_info series for each {prof} service, with its CPUs",
              sorted(dict(k[1])["cpus"] for k in info), sorted(c["cpus"] for c in mine))
        for c in mine:
            # 0 for the first launch of its key (profile and command line), as metrics.c counts
            replica = sum(1 for o in mine if o is not c and o["key"] == c["key"] and
                          (o["since"], mine.index(o)) < (c["since"], mine.index(c)))
            ident = {("profile", prof), ("service", c["key"]), ("replica", str(replica))}
            cpus = got.get(("tunerun_service_cpus", frozenset(ident)))
            equal(f"metrics: {prof} {c['key']}: tunerun_service_cpus", cpus,
                  float(len(cpu_set(c["cpus"]))))
            inside = got.get(("tunerun_service_threads", frozenset(ident | {("placement",
                                                                              "inside")})))
            check(f"metrics: {prof} {c['key']}: its threads inside its placement",
                  inside and inside >= 1, inside)
            resident = [v for k, v in got.items() if k[0] == "tunerun_service_resident_bytes"
                        and ident <= k[1]]
            check(f"metrics: {prof} {c['key']}: resident bytes per node from numa_maps",
                  resident and sum(resident) > 0, resident)
            ratio = got.get(("tunerun_service_remote_memory_ratio", frozenset(ident)))
            check(f"metrics: {prof} {c['key']}: the remote share, between 0 and 1",
                  ratio is not None and 0 <= ratio <= 1, ratio)
    findings = {dict(k[1])["severity"]: v for k, v in got.items()
                if k[0] == "tunerun_doctor_findings"}
    equal("metrics: doctor's findings by severity", sorted(findings), ["crit", "info", "ok", "warn"])
    # Prometheus's rules: HELP and TYPE for each family; units in names; no _total on a gauge
    families = set(re.findall(r"^# TYPE (tunerun_\w+) (\w+)$", body, re.M))
    helped = set(re.findall(r"^# HELP (tunerun_\w+) ", body, re.M))
    names = {k[0] for k in got if k[0].startswith("tunerun_")}
    check("metrics: every tunerun metric has its HELP and TYPE",
          names <= {f for f, _ in families} and names <= helped, names, families)
    check("metrics: ... each a gauge, none named _total", all(t == "gauge" and not
          f.endswith("_total") for f, t in families), families)
    exporter.terminate()
    _, log = exporter.communicate(timeout=10)
    # a series twice is dropped with only a log line, not a scrape error
    check("metrics: node_exporter logged no series collected twice", "collected before" not in log,
          log[-1500:])
    shutil.rmtree(textfile, ignore_errors=True)
