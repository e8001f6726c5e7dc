# tests/host/nic.sh - tunerun doctor's network card checks (doctor_nic.c), on
# tests/doctor/make-fixtures' "nic" host: two nodes of 8 CPUs, the default
# route on bond0 over eth0 (ixgbe, node 1), eth1 (virtio, one queue pair,
# node 0), irqbalance running. Sourced by tests/host/run after its doctor
# section: it uses that section's $fx, findings(), has(), doc_finding() and
# fx_copy(), and run's expect and expect_match. Every variant is a copy in
# $tmp: $fx is only read.

nic=$fx/nic
nic_before=$(find "$nic" -exec stat -c '%n %s %Y' {} + | sort | md5sum)

# redis's near is default-route, as the shipped profile has it
out=$(findings "$nic" redis)
for want in nic.node=info nic.irqbalance=info nic.irqs=warn nic.rps=info nic.xps=ok worst=warn status=1; do
    expect "doctor nic redis: $want" "$(has "$out" "$want")" yes
done
text=$(./tunerun doctor redis --root "$nic")
expect_match "doctor nic: the default route's interface is followed through the bond to its card and node" \
    "$(doc_finding "$text" nic.node)" "^  info +nic.node +default-route is eth0 via bond0 \(node 1\)$"
# nginx and HAProxy run on every node: near cannot move them, so nic.node says where the packet work belongs
for svc in nginx haproxy; do
    expect_match "doctor nic: $svc, spread over every node, is told the card's node is where its packets' work belongs" \
        "$(doc_finding "$(./tunerun doctor $svc --root "$nic")" nic.node)" \
        "why: $svc runs on every node, so near cannot move it to the card: node 1 is where its packets' work belongs"
done
expect "doctor nic: ... and redis, which near places on one node, is told nothing more" \
    "$(doc_finding "$text" nic.node | grep -c 'why:')" 0
# memcached names no near: a server of many connections (nofile 65536) is audited on the default route's
text=$(./tunerun doctor memcached --root "$nic")
expect_match "doctor nic: a server of many connections without near is audited on the default route's card" \
    "$(doc_finding "$text" nic.node)" "nic.node +default-route is eth0 via bond0 \(node 1\); memcached's near names no card: the default route's is audited"
expect_match "doctor nic: ... and a one-node service is told near would place it there" \
    "$(doc_finding "$text" nic.node)" "why: memcached runs on one node, which its profile chooses without regard to the card: near = default-route"
text=$(./tunerun doctor redis --root "$nic")
# 60 and 61 are on node 1 (61 by its effective CPU 9 of 8-15); 62's smp_affinity_list 0-15
# holds node 1's CPUs, but its effective CPU is 2; 63 has no effective list; 64 is the link's
expect_match "doctor nic: the queue IRQs off the card's node, counted by their effective CPUs" \
    "$(doc_finding "$text" nic.irqs)" \
    "nic.irqs +eth0: 2 of 4 queue IRQs handled off node 1 \(CPUs 8-15\): 62 eth0-TxRx-2 on CPU 2, 63 eth0-TxRx-3 on CPU 3$"
expect_match "doctor nic: ... why says what crosses the interconnect" "$(doc_finding "$text" nic.irqs)" \
    "why: the card writes each packet into node 1's memory; a queue whose interrupt lands on the other node"
# irqbalance leaves 62 and 63 alone (--banirq): a hand-written affinity holds for them
expect_match "doctor nic: IRQs irqbalance leaves alone are pinned by hand, now" "$(doc_finding "$text" nic.irqs)" \
    'fix: for i in 62 63; do echo 8-15 > /proc/irq/\$i/smp_affinity_list; done \(irqbalance leaves them alone: --banirq\)$'
expect_match "doctor nic: ... and for good, irqbalance is let place them" "$(doc_finding "$text" nic.irqs)" \
    'for good: IRQBALANCE_ARGS in /etc/default/irqbalance without --banirq for 62 63 \(it has "--banirq=62 --banirq=63"\), then systemctl restart irqbalance: it keeps them on node 1 itself'
expect_match "doctor nic: irqbalance is found running, with what /etc/default/irqbalance tells it" \
    "$(doc_finding "$text" nic.irqbalance)" \
    'nic.irqbalance +irqbalance runs \(pid 123\); banned CPUs: none \(the kernel.s isolated and nohz_full CPUs, irqbalance.s default\); banned IRQs: 62-63; IRQBALANCE_ARGS="--banirq=62 --banirq=63"$'
expect_match "doctor nic: RPS off on 4 queues for 8 CPUs is advice, spread over the card's node" \
    "$(doc_finding "$text" nic.rps)" 'fix: for q in /sys/class/net/eth0/queues/rx-\*; do echo ff00 > \$q/rps_cpus; done$'
# the queues' own add events carry the name udev renames: the rule is on the interface, by its card
expect_match "doctor nic: ... kept by a udev rule on the interface's add and rename, matched by its PCI function" \
    "$(doc_finding "$text" nic.rps)" \
    'for good: ACTION=="add\|move", SUBSYSTEM=="net", KERNELS=="0000:81:00.0", RUN\+="/bin/sh -c .for q in /sys\$env\{DEVPATH\}/queues/rx-\*; do echo ff00 > \$\$q/rps_cpus; done." in /etc/udev/rules.d/60-tunerun-rps.rules$'
expect_match "doctor nic: XPS masks are read" "$(doc_finding "$text" nic.xps)" "nic.xps +eth0: XPS maps CPUs 8-15 to its 4 transmit queues$"
v=$(fx_copy nic xps-off)
for q in 0 1 2 3; do echo 0000 >"$v/sys/devices/pci0000:80/0000:80:02.0/0000:81:00.0/net/eth0/queues/tx-$q/xps_cpus"; done
text=$(./tunerun doctor redis --root "$v")
expect_match "doctor nic: XPS off on several queues deals the 16 online CPUs out over the 4, in turn" \
    "$(doc_finding "$text" nic.xps)" \
    'fix: for m in 0:1111 1:2222 2:4444 3:8888; do echo \$\{m#\*:\} > /sys/class/net/eth0/queues/tx-\$\{m%:\*\}/xps_cpus; done$'
expect_match "doctor nic: ... kept by a udev rule, with udev's \$\$ and %% for the shell's \$ and %" \
    "$(doc_finding "$text" nic.xps)" \
    'for good: ACTION=="add\|move", SUBSYSTEM=="net", KERNELS=="0000:81:00.0", RUN\+="/bin/sh -c .for m in 0:1111 1:2222 2:4444 3:8888; do echo \$\$\{m#\*:\} > /sys\$env\{DEVPATH\}/queues/tx-\$\$\{m%%:\*\}/xps_cpus; done." in /etc/udev/rules.d/60-tunerun-xps.rules$'
expect_match "doctor nic: the card's group stands between IO and connections" \
    "$(printf '%s\n' "$text" | grep -E '^[A-Za-z]' | tr '\n' '|')" \
    "\|IO scheduler\|Network card: its node, IRQs and packet steering\|Connections and files\|"
expect "doctor nic --json: each finding's id, in the nic group" \
    "$(./tunerun doctor redis --root "$nic" --json | python3 -c 'import json, sys
print(" ".join(f["id"] for f in json.load(sys.stdin)["findings"] if f["group"] == "nic"))')" \
    "nic.node nic.irqbalance nic.irqs nic.rps nic.xps"

# irqbalance's settings: what it bans decides the fix
v=$(fx_copy nic stopped)
rm -r "$v/proc/123"
text=$(./tunerun doctor redis --root "$v")
expect_match "doctor nic: without irqbalance, nothing moves an IRQ" "$(doc_finding "$text" nic.irqbalance)" \
    "^  ok +nic.irqbalance +irqbalance does not run"
expect_match "doctor nic: ... so the fix writes the affinity" "$(doc_finding "$text" nic.irqs)" \
    'fix: for i in 62 63; do echo 8-15 > /proc/irq/\$i/smp_affinity_list; done$'
expect_match "doctor nic: ... and a oneshot unit writes it at boot through the PCI function's msi_irqs" \
    "$(doc_finding "$text" nic.irqs)" \
    "for good: a oneshot unit, .*tunerun-irq-eth0.service with \\[Unit\\] Wants=network-online.target and After=network-online.target, .*ExecStart=/bin/sh -c 'for i in /sys/devices/pci0000:80/0000:80:02.0/0000:81:00.0/msi_irqs/\*; do echo 8-15 > /proc/irq/\\$\\$\{i##\*/\}/smp_affinity_list; done'"
v=$(fx_copy nic banirq-huge)
sed -i 's/^IRQBALANCE_ARGS=.*/IRQBALANCE_ARGS="--banirq=4294967295 --banirq=62"/' "$v/etc/default/irqbalance"
# its peak resident memory, as the kernel counts it for a waited-for child
rss=$(python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' ./tunerun doctor redis --root "$v")
expect "doctor nic: a --banirq beyond any IRQ number is no bitmap of 2^32 bits (peak under 100 MiB)" \
    "$([ "$rss" -lt 102400 ] && echo yes || echo "no: $rss KiB")" yes
expect_match "doctor nic: ... and bans nothing, while the rest of IRQBALANCE_ARGS holds" \
    "$(doc_finding "$(./tunerun doctor redis --root "$v")" nic.irqbalance)" "; banned IRQs: 62; IRQBALANCE_ARGS="
v=$(fx_copy nic banmod)
sed -i 's/^IRQBALANCE_ARGS=.*/IRQBALANCE_ARGS="--banmod=ixgbe"/' "$v/etc/default/irqbalance"
expect_match "doctor nic: a module banned from irqbalance (--banmod) leaves its card's IRQs alone too" \
    "$(doc_finding "$(./tunerun doctor redis --root "$v")" nic.irqs)" \
    'fix: for i in 62 63; do echo 8-15 > /proc/irq/\$i/smp_affinity_list; done \(irqbalance leaves them alone: --banmod=ixgbe\)$'
sed -i 's/^IRQBALANCE_ARGS=.*/IRQBALANCE_ARGS="-i 62"/' "$v/etc/default/irqbalance"
text=$(./tunerun doctor redis --root "$v")
expect_match "doctor nic: of IRQs it leaves alone and IRQs it places, the fix is each one's" "$(doc_finding "$text" nic.irqs)" \
    'fix: systemctl restart irqbalance: .*; and echo 8-15 > /proc/irq/62/smp_affinity_list \(irqbalance leaves it alone: --banirq\)$'
expect_match "doctor nic: ... and for good too" "$(doc_finding "$text" nic.irqs)" \
    'for good: irqbalance, left running, places them on node 1 at each start; .*; and IRQBALANCE_ARGS in /etc/default/irqbalance without --banirq for 62 \(it has "-i 62"\)'
sed -i 's|^IRQBALANCE_ARGS=.*|IRQBALANCE_ARGS="--policyscript=/etc/irqbalance.d"|' "$v/etc/default/irqbalance"
text=$(./tunerun doctor redis --root "$v")
expect_match "doctor nic: a policy script may ban them: the fix works either way" "$(doc_finding "$text" nic.irqs)" \
    'fix: for i in 62 63; do echo 8-15 > /proc/irq/\$i/smp_affinity_list; done, if irqbalance.s --policyscript bans them \(ban=true\); if it does not, systemctl restart irqbalance places them on node 1$'
expect_match "doctor nic: ... and for good, the script lets irqbalance place them" "$(doc_finding "$text" nic.irqs)" \
    'for good: have irqbalance.s policy script .* print ban=false for /sys/devices/pci0000:80/0000:80:02.0/0000:81:00.0.s IRQs, then systemctl restart irqbalance'
# the virtio NIC's queue 71 on node 1's CPU 9: irqbalance matches --banmod against the PCI
# function's driver (virtio-pci) and the IRQ's name (virtio2-input.0), not virtio_net
v=$(fx_copy nic banmod-virtio)
sed -i 's/^bond0\t00000000/eth1\t00000000/' "$v/proc/net/route"
echo 9 >"$v/proc/irq/71/effective_affinity_list"
sed -i 's/^IRQBALANCE_ARGS=.*/IRQBALANCE_ARGS="--banmod=virtio_net"/' "$v/etc/default/irqbalance"
expect_match "doctor nic: --banmod names the PCI function's driver, so virtio_net leaves a virtio NIC's IRQs to irqbalance" \
    "$(doc_finding "$(./tunerun doctor redis --root "$v")" nic.irqs)" "fix: systemctl restart irqbalance"
sed -i 's/^IRQBALANCE_ARGS=.*/IRQBALANCE_ARGS="-m virtio"/' "$v/etc/default/irqbalance"
expect_match "doctor nic: ... and virtio leaves them alone" "$(doc_finding "$(./tunerun doctor redis --root "$v")" nic.irqs)" \
    'fix: echo 0-7 > /proc/irq/71/smp_affinity_list \(irqbalance leaves it alone: --banmod=virtio\)$'
v=$(fx_copy nic banned)
sed -i 's/^IRQBALANCE_ARGS=.*/IRQBALANCE_BANNED_CPULIST="4-15"/' "$v/etc/default/irqbalance"
text=$(./tunerun doctor redis --root "$v")
expect_match "doctor nic: a ban of every CPU of the card's node is the cause, and the fix keeps the rest banned" \
    "$(doc_finding "$text" nic.irqs)" \
    "fix: IRQBALANCE_BANNED_CPULIST=4-7 in /etc/default/irqbalance \(irqbalance bans IRQBALANCE_BANNED_CPULIST=4-15, every CPU of node 1 among them\), then systemctl restart irqbalance$"
echo 'IRQBALANCE_BANNED_CPUS=ff00' >>"$v/etc/default/irqbalance"
expect_match "doctor nic: the deprecated hex mask wins over the list, as in irqbalance 1.9" \
    "$(doc_finding "$(./tunerun doctor redis --root "$v")" nic.irqs)" \
    "fix: IRQBALANCE_BANNED_CPUS commented out in /etc/default/irqbalance \(irqbalance bans IRQBALANCE_BANNED_CPUS=ff00,"
sed -i '/^IRQBALANCE_BANNED_CPU/d' "$v/etc/default/irqbalance"
echo 8-15 >"$v/sys/devices/system/cpu/isolated"
expect_match "doctor nic: without a setting, irqbalance bans the kernel's isolated CPUs" \
    "$(doc_finding "$(./tunerun doctor redis --root "$v")" nic.irqs)" \
    "fix: take node 1's CPUs out of isolcpus= and nohz_full= on the kernel command line"
rm "$v/sys/devices/system/cpu/isolated"
text=$(./tunerun doctor redis --root "$v")
expect_match "doctor nic: IRQs irqbalance may move were moved after it placed them: its restart puts them back" \
    "$(doc_finding "$text" nic.irqs)" "fix: systemctl restart irqbalance: it places every IRQ on its device's node \(1 here\) when it starts"
expect_match "doctor nic: ... and for good, nothing may write their affinity after it" \
    "$(doc_finding "$text" nic.irqs)" "for good: irqbalance, left running, places them on node 1 at each start"
echo 10 >"$v/proc/irq/62/effective_affinity_list"
echo 11 >"$v/proc/irq/63/smp_affinity_list"
expect_match "doctor nic: every queue IRQ on the card's node is ok" \
    "$(./tunerun doctor redis --root "$v" | grep 'nic.irqs')" "^  ok +nic.irqs +eth0: all 4 queue IRQs handled on node 1 \(CPUs 8-15\)$"

# RPS: eth1 has one queue pair on node 0, and RPS spreads its packets over both nodes
v=$(fx_copy nic eth1)
sed -i 's/^bond0\t00000000/eth1\t00000000/' "$v/proc/net/route"
out=$(findings "$v" redis)
expect "doctor nic: RPS beyond the card's node warns for a one-node service" \
    "$(has "$out" nic.rps=warn) $(has "$out" nic.irqs=ok) $(has "$out" nic.xps=ok)" "yes yes yes"
text=$(./tunerun doctor redis --root "$v")
expect_match "doctor nic: ... saying which CPUs, and the one queue's fix" "$(doc_finding "$text" nic.rps | tr '\n' ' ')" \
    "nic.rps +eth1: RPS spreads packets over CPUs 0-15, beyond node 0's 0-7.*fix: echo ff > /sys/class/net/eth1/queues/rx-0/rps_cpus"
expect "doctor nic: ... and only info for a service that spans nodes itself (nginx)" \
    "$(has "$(findings "$v" nginx)" nic.rps=info)" yes
echo 00000000,00000000 >"$v/sys/class/net/eth1/queues/rx-0/rps_cpus"
expect_match "doctor nic: RPS off (a mask of zeros) on one queue for 8 CPUs is advice to spread it" \
    "$(doc_finding "$(./tunerun doctor redis --root "$v")" nic.rps)" \
    "^  info +nic.rps +eth1: RPS off; 1 receive queue for node 0's 8 CPUs"
echo 0 >"$v/sys/devices/system/node/node0/cpulist"
expect_match "doctor nic: ... and no advice where the card's node has no more CPUs than queues" \
    "$(./tunerun doctor redis --root "$v" | grep nic.rps)" "^  ok +nic.rps +eth1: RPS off; 1 receive queue for node 0's 1 CPU$"

# a card the firmware gives no node, where the profile named none
nn=$(fx_copy nic no-node)
echo -1 >"$nn/sys/devices/pci0000:80/0000:80:02.0/0000:81:00.0/numa_node"
out=$(findings "$nn" memcached)
expect "doctor nic: a card the firmware gives no node is info where the profile named no card" \
    "$(has "$out" nic.node=info) $(printf '%s' "$out" | grep -c 'nic.irqs=')" "yes 0"

# which profiles get the checks: by what they set, never by their name
expect "doctor nic: a profile whose near is a disk gets none (mysql)" \
    "$(findings "$nic" mysql | tr ' ' '\n' | grep -c '^nic\.')" 0
printf '[profile]\nfears = packets\n' >"$tmp/nic-plain.ini"
expect "doctor nic: nor does one that is no server of many connections" \
    "$(findings "$nic" "--profile-file $tmp/nic-plain.ini" | tr ' ' '\n' | grep -c '^nic\.')" 0

# near names the card: netdev:, ip: and default-route, as a profile or --set spells them
printf '[profile]\nname = cache\ninclude = %s\n[placement]\nnear = netdev:bond0\n' \
    "$(readlink -f profiles/redis.ini)" >"$tmp/nic-near.ini"
text=$(./tunerun doctor --profile-file "$tmp/nic-near.ini" --root "$nic")
expect_match "doctor nic: near = netdev:bond0 is audited as named" "$(doc_finding "$text" nic.node)" \
    "^  info +nic.node +netdev:bond0 is eth0 \(node 1\)$"
expect "doctor nic: ... and is no data directory" "$(printf '%s\n' "$text" | head -n 1)" \
    "tunerun doctor cache: root $nic, data / (none named)"
expect_match "doctor nic: near = ip:ADDR is the interface the address is on" \
    "$(./tunerun doctor --profile-file "$tmp/nic-near.ini" --root "$nic" --set placement.near=ip:10.0.0.5 | grep nic.node)" \
    "^  info +nic.node +ip:10.0.0.5 is on eth0 via bond0 \(node 1\)$"
out=$(findings "$nic" "--profile-file $tmp/nic-near.ini" --set placement.near=netdev:lo)
expect "doctor nic: a virtual interface is info, and nothing more to audit" \
    "$(has "$out" nic.node=info) $(printf '%s' "$out" | grep -c 'nic.irqs=')" "yes 0"
out=$(findings "$nic" "--profile-file $tmp/nic-near.ini" --set placement.near=netdev:eth9)
expect "doctor nic: an interface that is not there warns" "$(has "$out" nic.node=warn)" yes
expect "doctor nic: ... and is info on a host of one node, where near has no node to choose" \
    "$(has "$(findings "$fx/nvme-v2" redis)" nic.node=info)" yes
text=$(./tunerun doctor --profile-file "$tmp/nic-near.ini" --root "$nn")
expect_match "doctor nic: a card the firmware gives no node warns where near names it on two nodes" \
    "$(doc_finding "$text" nic.node | tr '\n' ' ')" "^  warn +nic.node .*fix: echo NODE > /sys/bus/pci/devices/0000:81:00.0/numa_node, .* then systemctl restart irqbalance if it runs"
out=$(findings "$nn" "--profile-file $tmp/nic-near.ini")
expect "doctor nic: ... and its IRQs are judged against no node" \
    "$(has "$out" nic.node=warn) $(printf '%s' "$out" | grep -c 'nic.irqs=')" "yes 0"
expect "doctor nic: a profile of few connections gets the checks when its near names a card" \
    "$(has "$(findings "$nic" "--profile-file $tmp/nic-plain.ini" --set placement.near=default-route)" nic.irqs=warn)" yes
expect "doctor nic: nor does an audit without a profile" "$(findings "$nic" "" | tr ' ' '\n' | grep -c '^nic\.')" 0
undocumented=
for id in nic.node nic.irqbalance nic.irqs nic.rps nic.xps; do
    grep -qx "\.B $id" launcher/man/tunerun.1 || undocumented="$undocumented $id"
done
expect "doctor nic: tunerun(1) documents each finding of the nic group" "$undocumented" ""
expect "doctor nic: reads, never writes" "$(find "$nic" -exec stat -c '%n %s %Y' {} + | sort | md5sum)" "$nic_before"
