# tests/host/tiers.sh - tunerun doctor's memory tier checks (doctor_tiers.c), on
# tests/doctor/make-fixtures' "tiers" host: DRAM nodes 0-1 in memory_tier4, a
# slower CPU-less node 2 in memory_tier22, demotion on, kernel.numa_balancing 2,
# Debian 13's kernel 6.12. Sourced by tests/host/run after its doctor section:
# it uses that section's $fx, findings(), has(), doc_finding() and fx_copy(),
# and run's expect and expect_match. Every variant is a copy in $tmp: $fx is
# only read.

tiers=$fx/tiers
tiers_before=$(find "$tiers" -exec stat -c '%n %s %Y' {} + | sort | md5sum)
# tiers_ids ROOT PROFILE [ARGS]: "id=severity" of the tiers group's findings, in order
tiers_ids() {
    local root=$1 prof=$2
    shift 2
    ./tunerun doctor $prof --root "$root" --json "$@" | python3 -c 'import json, sys
print(" ".join(f["id"] + "=" + f["severity"] for f in json.load(sys.stdin)["findings"] if f["group"] == "tiers"))'
}

# a latency-bound database: demotion warns, with its fix now and for good
out=$(findings "$tiers" mysql)
for want in tiers.layout=info tiers.demotion=warn tiers.balancing=info tiers.weights=info \
    numa.balancing=ok worst=warn status=1; do
    expect "doctor tiers mysql: $want" "$(has "$out" "$want")" yes
done
text=$(./tunerun doctor mysql --root "$tiers")
expect_match "doctor tiers: the tiers and their nodes, the slower CPU-less one named" \
    "$(doc_finding "$text" tiers.layout)" \
    "^  info +tiers.layout +2 memory tiers: memory_tier4 = nodes 0-1, memory_tier22 = node 2 \(slower, without CPUs\)$"
expect_match "doctor tiers: ... and that tiers = fastest keeps the service's own pages off it" \
    "$(doc_finding "$text" tiers.layout)" "why: .*node 2 is slower memory \(CXL, NVDIMM\): mysql's tiers = fastest keeps its own allocations off it"
expect_match "doctor tiers: demotion on is a warning for mysql" "$(doc_finding "$text" tiers.demotion)" \
    "^  warn +tiers.demotion +demotion_enabled = true: reclaim on nodes 0-1 moves cold pages down$"
expect_match "doctor tiers: ... why: its memory policy does not stop demotion" "$(doc_finding "$text" tiers.demotion)" \
    "why: under memory pressure the kernel moves the cold pages of every process on nodes 0-1 to node 2 .*mysql's too: its memory policy does not stop it"
expect_match "doctor tiers: ... nor, before Linux 6.16, a cpuset" "$(doc_finding "$text" tiers.demotion)" \
    "and on this kernel \(before 6.16\) no cpuset does either"
expect_match "doctor tiers: ... and NUMA balancing does not bring its pages back" "$(doc_finding "$text" tiers.demotion)" \
    "NUMA balancing does not promote them back, as it skips memory under the policy tunerun sets"
expect_match "doctor tiers: ... fixed now with a /sys write" "$(doc_finding "$text" tiers.demotion)" \
    "fix: echo false > /sys/kernel/mm/numa/demotion_enabled$"
expect_match "doctor tiers: ... and for good with a tmpfiles.d line" "$(doc_finding "$text" tiers.demotion)" \
    "for good: w /sys/kernel/mm/numa/demotion_enabled - - - - false in /etc/tmpfiles.d/tunerun-tiers.conf$"
expect_match "doctor tiers: memory tiering mode promotes, at its rate limit" "$(doc_finding "$text" tiers.balancing)" \
    "^  info +tiers.balancing +kernel.numa_balancing = 2 \(memory tiering\); promotion at most 65536 MB/s per node$"
expect_match "doctor tiers: ... why: other processes' hot pages move into the database's nodes" \
    "$(doc_finding "$text" tiers.balancing)" \
    "On mysql's nodes go the hot pages of other processes that run on their CPUs, and reclaim there demotes its cold pages to make room, never to come back"
expect_match "doctor tiers: ... and where the database comes first, 0, as numa.balancing says for mode 1" \
    "$(doc_finding "$text" tiers.balancing)" \
    "fix: sysctl -w kernel.numa_balancing=0, where mysql comes first on this host$"
expect_match "doctor tiers: mode 2 alone costs a one-node service nothing: numa.balancing is ok" \
    "$(doc_finding "$text" numa.balancing)" "why: 2 is memory tiering alone: it never unmaps a page on the fastest tier"
expect_match "doctor tiers: the kernel's weights for weighted interleave" "$(doc_finding "$text" tiers.weights)" \
    "^  info +tiers.weights +weighted interleave: node 0 = 1, node 1 = 1, node 2 = 1$"
expect_match "doctor tiers: the group stands between NUMA and memory" \
    "$(printf '%s\n' "$text" | grep -E '^[A-Za-z]' | tr '\n' '|')" \
    "\|NUMA\|Memory tiers: demotion and promotion\|Memory: THP, swap, overcommit, dirty pages\|"
expect "doctor tiers --json: each finding's id, in the tiers group, in order" \
    "$(tiers_ids "$tiers" mysql)" "tiers.layout=info tiers.demotion=warn tiers.balancing=info tiers.weights=info"

# which profiles: by what they set (a swap policy of its own, no tiers = all), never by name
for svc in mariadb postgresql redis memcached; do
    expect "doctor tiers: demotion warns for $svc, which keeps a swap policy" \
        "$(has "$(findings "$tiers" $svc)" tiers.demotion=warn)" yes
done
expect_match "doctor tiers: redis is told its swap_max = 0 does not stop demotion" \
    "$(doc_finding "$(./tunerun doctor redis --root "$tiers")" tiers.demotion)" \
    "nor does its swap_max = 0 \(a page that may not be swapped may still be demoted\)"
for svc in nginx haproxy java; do
    expect "doctor tiers: demotion is info for $svc, which keeps no swap policy" \
        "$(has "$(findings "$tiers" $svc)" tiers.demotion=info)" yes
done
text=$(./tunerun doctor nginx --root "$tiers")
expect_match "doctor tiers: ... nginx is told the slower tier is a cache before swap" "$(doc_finding "$text" tiers.demotion)" \
    "the slower tier is a cache before swap; the profile keeps no swap policy of its own"
expect "doctor tiers: ... with no fix, and no fix for its balancing either" \
    "$(doc_finding "$text" tiers.demotion)$(doc_finding "$text" tiers.balancing)" \
    "$(doc_finding "$text" tiers.demotion | grep -v 'fix:')$(doc_finding "$text" tiers.balancing | grep -v 'fix:')"
expect "doctor tiers: a database that opts into the slower tier (tiers = all) is told, not warned" \
    "$(tiers_ids "$tiers" mysql --set placement.tiers=all)" \
    "tiers.layout=info tiers.demotion=info tiers.balancing=info tiers.weights=info"
expect_match "doctor tiers: ... its layout says its pages may come from node 2" \
    "$(doc_finding "$(./tunerun doctor mysql --root "$tiers" --set placement.tiers=all)" tiers.layout)" \
    "mysql's tiers = all lets its pages come from it once the fast tier is full"
expect "doctor tiers: without a profile, all of it is info" "$(tiers_ids "$tiers" "")" \
    "tiers.layout=info tiers.demotion=info tiers.balancing=info tiers.weights=info"
expect_match "doctor tiers: weighted-interleave with equal weights is told its slower node takes as many" \
    "$(doc_finding "$(./tunerun doctor mysql --root "$tiers" --set placement.memory=weighted-interleave)" tiers.weights)" \
    "why: all equal: mysql's weighted-interleave spreads its pages evenly"

# the kernel decides what a cpuset does against demotion: 6.16 checks cgroup v2's cpuset.mems
v=$(fx_copy tiers k616)
echo 6.16.3-amd64 >"$v/proc/sys/kernel/osrelease"
expect_match "doctor tiers: on 6.16 a cgroup v2 cpuset that leaves the slower nodes out is spared" \
    "$(doc_finding "$(./tunerun doctor mysql --root "$v")" tiers.demotion)" \
    "this kernel \(6.16 or later\) spares a memory cgroup whose cgroup v2 cpuset.mems leaves the slower nodes out, which tunerun's own cpuset is only where the memory controller is on in it too"

# demotion off: ok, and NUMA balancing's promotion without demotion
v=$(fx_copy tiers off)
echo false >"$v/sys/kernel/mm/numa/demotion_enabled"
out=$(findings "$v" mysql)
expect "doctor tiers: demotion off is ok" "$(has "$out" tiers.demotion=ok) $(has "$out" worst=info)" "yes yes"
expect_match "doctor tiers: ... and promotion's why no longer speaks of demotion" \
    "$(doc_finding "$(./tunerun doctor mysql --root "$v")" tiers.balancing)" \
    "that run on their CPUs, and reclaim there makes room, its page cache first"

# NUMA balancing's other modes
v=$(fx_copy tiers bal0)
echo 0 >"$v/proc/sys/kernel/numa_balancing"
text=$(./tunerun doctor mysql --root "$v")
expect_match "doctor tiers: balancing off is ok" "$(doc_finding "$text" tiers.balancing)" \
    "^  ok +tiers.balancing +kernel.numa_balancing = 0 \(off\)$"
expect_match "doctor tiers: ... but with demotion on, a demoted page stays down" "$(doc_finding "$text" tiers.balancing)" \
    "why: nothing promotes a demoted page back: it stays on node 2 until it is freed$"
echo 1 >"$v/proc/sys/kernel/numa_balancing"
text=$(./tunerun doctor --root "$v")
expect_match "doctor tiers: normal balancing alone on a tiered host promotes only into free memory" \
    "$(doc_finding "$text" tiers.balancing)" \
    "moves a page of node 2 to the node whose CPUs touch it only while that node has memory free"
expect_match "doctor tiers: ... and 3 adds memory tiering's rules" "$(doc_finding "$text" tiers.balancing)" \
    "fix: sysctl -w kernel.numa_balancing=3$"
out=$(findings "$v" mysql)
expect "doctor tiers: ... but a one-node service gets numa.balancing's fix (0), and no other" \
    "$(has "$out" numa.balancing=warn) $(doc_finding "$(./tunerun doctor mysql --root "$v")" tiers.balancing | grep -c 'fix:')" "yes 0"
echo 3 >"$v/proc/sys/kernel/numa_balancing"
text=$(./tunerun doctor mysql --root "$v")
expect "doctor tiers: mode 3: both findings name the same fix, 0" \
    "$(doc_finding "$text" numa.balancing | grep 'fix:' | sed 's/,.*//;s/^ *//') $(doc_finding "$text" tiers.balancing | grep 'fix:' | sed 's/,.*//;s/^ *//')" \
    "fix: sysctl -w kernel.numa_balancing=0 fix: sysctl -w kernel.numa_balancing=0"

# one tier: nothing to say (this host's case: memory_tier4 alone)
v=$(fx_copy tiers one-tier)
rm -r "$v/sys/devices/virtual/memory_tiering/memory_tier22"
echo 0-2 >"$v/sys/devices/virtual/memory_tiering/memory_tier4/nodelist"
expect "doctor tiers: every node in one tier: no tiers finding at all" "$(tiers_ids "$v" mysql)" ""
expect "doctor tiers: ... so demotion on warns of nothing" "$(has "$(findings "$v" mysql)" worst=info)" yes
if [ -d /sys/devices/virtual/memory_tiering ] && [ "$(ls -d /sys/devices/virtual/memory_tiering/memory_tier* | wc -l)" -gt 1 ]; then
    echo "# skipped: this host has more than one memory tier"
else
    expect "doctor tiers: this host, of one memory tier, gets no tiers finding" "$(tiers_ids / mysql)" ""
fi

# before memory tiers (Linux 5.15 to 6.0): demotion led from the nodes with CPUs to those without
v=$(fx_copy tiers pre61)
rm -r "$v/sys/devices/virtual/memory_tiering"
echo 5.15.0-119-generic >"$v/proc/sys/kernel/osrelease"
text=$(./tunerun doctor mysql --root "$v")
expect_match "doctor tiers: a kernel before 6.1 is said to be one, and its memory-only node named" \
    "$(doc_finding "$text" tiers.layout)" \
    "no memory tiers in sysfs \(a kernel before 6.1\): demotion leads from the nodes with CPUs to those of memory alone: nodes 0-1, node 2 \(slower, without CPUs\)$"
expect "doctor tiers: ... and its demotion warns as well" "$(has "$(findings "$v" mysql)" tiers.demotion=warn)" yes
rm "$v/sys/kernel/mm/numa/demotion_enabled"
expect "doctor tiers: ... a kernel without demotion either (before 5.15) has nothing to say" \
    "$(tiers_ids "$v" mysql)" ""

# in a container the settings are the host's
v=$(fx_copy tiers container)
touch "$v/.dockerenv"
expect_match "doctor tiers: in a container, demotion's fix is the host's" \
    "$(doc_finding "$(./tunerun doctor mysql --root "$v")" tiers.demotion)" \
    "fix: on the host, not in this container: echo false > /sys/kernel/mm/numa/demotion_enabled$"

undocumented=
for id in tiers.layout tiers.demotion tiers.balancing tiers.weights; do
    grep -qx "\.B $id" launcher/man/tunerun.1 || undocumented="$undocumented $id"
done
expect "doctor tiers: tunerun(1) documents each finding of the tiers group" "$undocumented" ""
expect "doctor tiers: reads, never writes" "$(find "$tiers" -exec stat -c '%n %s %Y' {} + | sort | md5sum)" "$tiers_before"
