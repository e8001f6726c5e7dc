/*
 * doctor_nic.c - the network card a service lives on: the node it hangs
 * off, where its queues' interrupts are handled, whether irqbalance moves
 * them, and where packets are steered in software (RPS and XPS). For a
 * profile whose `near` names a NIC (nic.h), and for a server of many
 * connections that names no `near` of its own, the default route's.
 *
 * A NIC writes each packet it receives by DMA into memory of its own node
 * and raises the interrupt of the queue the packet landed in, on a CPU its
 * affinity names; the softirq that runs the protocol stack runs on that
 * CPU too, or on one RPS picks (Linux's Documentation/networking/
 * scaling.rst). A packet handled on the other node is read across the
 * interconnect, and the service's reply crosses it again: a cost nginx and
 * HAProxy pay on every request, and a latency-bound redis feels in every
 * microsecond. So each queue IRQ is compared with the CPUs of the NIC's
 * node, not with the service's placement, which the plan answers for:
 * doctor_nic_irqs.c judges them, and irqbalance, which places them.
 *
 * Like the rest of doctor, it reads everything under the root, so a
 * fixture shaped like another host's /proc, /sys and /etc is audited the
 * same way; it changes nothing.
 */
#include "doctor_internal.h"
#include "nic.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIST_MAX 8192 /* a CPU list as sysfs writes it */

/* What the NIC checks share: the host, read once. */
struct nic_audit {
    struct doc *d;
    int nodes;             /* NUMA nodes of the host */
    struct nic_irqs *irqs; /* /proc/interrupts and irqbalance (doctor_nic_irqs.c) */
};

/* ---- what the host says --------------------------------------------------- */

static bool node_cpus(const struct doc *d, int node, hwloc_bitmap_t set)
{
    char path[96];
    snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
    return doc_rd_list(d, path, set);
}

/* How many NUMA nodes sysfs lists (node0, node1, ...); 1 where it lists none. */
static int host_nodes(const struct doc *d)
{
    int error, n = 0;
    DIR *h = doc_opendir(d, "/sys/devices/system/node", &error);
    for (struct dirent *e; h && (e = readdir(h)) != NULL;)
        n += strncmp(e->d_name, "node", 4) == 0 && isdigit((unsigned char)e->d_name[4]);
    if (h)
        closedir(h);
    return n ? n : 1;
}

/*
 * A set as the kernel's hex masks write it (rps_cpus, xps_cpus): groups
 * of 32 CPUs, the highest first, separated by commas ("ff,00000000").
 * The kernel refuses a group of more than 8 digits.
 */
static char *kernel_mask(hwloc_const_bitmap_t set)
{
    char *hex = NULL;
    if (hwloc_bitmap_taskset_asprintf(&hex, set) < 0 || hex == NULL)
        return xstrdup("0");
    const char *digits = strncmp(hex, "0x", 2) == 0 ? hex + 2 : hex;
    size_t len = strlen(digits), k = 0;
    char *out = xcalloc(len + len / 8 + 1, 1);
    for (size_t i = 0; i < len; i++) {
        if (i && (len - i) % 8 == 0)
            out[k++] = ',';
        out[k++] = digits[i];
    }
    free(hex);
    return out;
}

/* ---- nic.node ------------------------------------------------------------- */

/*
 * The interface doctor audits, and whether the profile named it: its
 * `near`, or for a server of many connections with no `near` at all (a
 * path `near` is its disk) the default route's, the way to it.
 */
static const char *audited_spec(const struct doc *d, bool *named)
{
    const char *near = d->p ? d->p->placement.near : NULL;
    *named = near && nic_spec(near);
    if (*named)
        return near;
    return d->p && near == NULL && doc_many_connections(d) ? NIC_DEFAULT_ROUTE : NULL;
}

/*
 * Why the card's node matters to where the service runs, when it has one.
 * A one-node service whose profile names no card is placed without regard
 * to it, which near = default-route would change. A service spread over
 * every node (nginx, nodes = all) cannot move to the card, near or not:
 * the card's node is then where its packets' work belongs (the queue IRQs
 * and RPS, checked next), and what of it runs on the other nodes reaches
 * each packet across the interconnect. NULL where there is nothing to say (one
 * node here, or near places the service).
 */
static char *found_why(const struct nic_audit *a, bool named, hwloc_const_bitmap_t nodes)
{
    const struct doc *d = a->d;
    unsigned want = d->p->placement.nodes; /* 0: all */
    if (a->nodes == 1)
        return NULL;
    if (want == 1)
        return named ? NULL
                     : doc_fmt("%s runs on one node, which its profile chooses without regard to "
                               "the card: near = default-route in its [placement] puts it on the "
                               "card's",
                               doc_who(d));
    if (want != 0 && want < (unsigned)a->nodes)
        return NULL; /* near ranks the nodes its group is made of */
    char *list = bitmap_list(nodes);
    char *why = doc_fmt("%s runs on every node, so near cannot move it to the card: node%s %s "
                        "%s where its packets' work belongs (the queue IRQs and RPS below), and "
                        "what of it runs on the other nodes reaches each packet across the "
                        "interconnect",
                        doc_who(d), hwloc_bitmap_weight(nodes) > 1 ? "s" : "", list,
                        hwloc_bitmap_weight(nodes) > 1 ? "are" : "is");
    free(list);
    return why;
}

/*
 * What `near` comes to. A NIC the firmware gives no node warns where the
 * profile named it on a host of several nodes: near cannot place the
 * service, and nothing says so at launch but the plan. A name that is not
 * there (a typo, or an interface renamed: eth0 is ens3 now), or a
 * default-route on a host without one, warns on such a host too. On a host
 * of one node both are info: there is no node near could have chosen. A
 * virtual interface is info: in a container, the default route's is a veth
 * whose packets the host's NIC receives, which doctor on the host audits.
 */
static void check_node(struct nic_audit *a, const char *spec, bool named, enum near_status st,
                       const char *what, const struct nic *v, hwloc_const_bitmap_t nodes)
{
    struct doc *d = a->d;
    char whose[160] = "";
    if (!named)
        snprintf(whose, sizeof(whose),
                 "; %.64s's near names no card: the default route's is audited", doc_who(d));
    if (st == NEAR_NO_PATH) {
        bool warn = a->nodes > 1;
        if (named) /* without a default route, a profile that named none has nothing to audit */
            doc_add(d, "nic", "nic.node", warn ? SEV_WARN : SEV_INFO, doc_fmt("%s", what),
                    warn ? doc_fmt("near = %s names no interface here, so %s is placed as "
                                   "without it: its packets may be handled a node away",
                                   spec, doc_who(d))
                         : doc_fmt("near = %s names no interface here; with one node, every "
                                   "CPU is as near any card as another",
                                   spec),
                    warn ? doc_fmt("--set placement.near=netdev:IF, IF an interface `ip -br "
                                   "link` lists (tunerun plan %s shows where it then places it)",
                                   doc_who(d))
                         : NULL,
                    warn ? doc_fmt("near = netdev:IF in the profile's [placement] (systemd's "
                                   "predictable names call eth0 ensN or enpNsM)")
                         : NULL);
        return;
    }
    if (st == NEAR_NO_DEVICE) {
        doc_add(d, "nic", "nic.node", SEV_INFO, doc_fmt("%s%s", what, whose),
                doc_fmt("only virtual interfaces: no card whose node packets could be near; in "
                        "a container its packets come through the host's NIC, which tunerun "
                        "doctor on the host audits"),
                NULL, NULL);
        return;
    }
    if (st == NEAR_NO_NODE) {
        bool warn = named && a->nodes > 1;
        const char *pci = strrchr(v[0].dev, '/') ? strrchr(v[0].dev, '/') + 1 : v[0].name;
        doc_add(d, "nic", "nic.node", warn ? SEV_WARN : SEV_INFO, doc_fmt("%s%s", what, whose),
                a->nodes > 1
                    ? doc_fmt("the firmware gives %s's slot no node (numa_node -1, no ACPI _PXM), "
                              "so near cannot place %s by it, and the kernel and irqbalance "
                              "treat the card as equally far from every node",
                              v[0].name, doc_who(d))
                    : doc_fmt("one node: every CPU is as near the card as any other"),
                warn ? doc_fmt("echo NODE > /sys/bus/pci/devices/%s/numa_node, NODE being the "
                               "socket its slot is wired to (the board's manual says), then "
                               "systemctl restart irqbalance if it runs: near uses the node at "
                               "the next launch, irqbalance only from its start; the kernel logs "
                               "the write as a firmware bug",
                               pci)
                     : NULL,
                warn ? doc_fmt("a firmware update that gives the slot its node; until then "
                               "ACTION==\"add\", SUBSYSTEM==\"pci\", KERNEL==\"%s\", "
                               "ATTR{numa_node}=\"NODE\" in "
                               "/etc/udev/rules.d/60-tunerun-numa.rules",
                               pci)
                     : NULL);
        return;
    }
    doc_add(d, "nic", "nic.node", SEV_INFO, doc_fmt("%s%s", what, whose),
            found_why(a, named, nodes), NULL, NULL);
}

/* ---- nic.rps, nic.xps ------------------------------------------------------ */

/* How many queues of a kind ("rx", "tx") an interface has, and the union of their masks. */
static int queue_masks(const struct doc *d, const char *ifname, const char *kind, const char *file,
                       hwloc_bitmap_t all)
{
    char path[256], buf[LIST_MAX];
    hwloc_bitmap_t one = hwloc_bitmap_alloc();
    hwloc_bitmap_zero(all);
    int q = 0;
    for (;; q++) {
        snprintf(path, sizeof(path), "/sys/class/net/%s/queues/%s-%d/%s", ifname, kind, q, file);
        if (!doc_rd(d, path, buf, sizeof(buf)) || hwloc_bitmap_sscanf(one, buf) < 0)
            break;
        hwloc_bitmap_or(all, all, one);
    }
    hwloc_bitmap_free(one);
    return q;
}

/*
 * For good, a queue setting is a udev rule that runs script (sh, with
 * /sys$env{DEVPATH} the interface's directory) each time the card's
 * interface appears or is renamed. It matches the interface by its card's
 * PCI function, not by its name, and on the interface's own event, not its
 * queues': the kernel announces the queues under the interface's first
 * name (eth0), and udev renames it (enp129s0f0) only after, so a rule on
 * the queues by the final name never matches at boot, and one by the first
 * name writes under a path that is gone. The rename's own event, "move",
 * comes with the new path.
 */
static char *udev_rule(const struct nic *nic, const char *file, const char *script)
{
    const char *pci = strrchr(nic->dev, '/') ? strrchr(nic->dev, '/') + 1 : nic->dev;
    return doc_fmt("ACTION==\"add|move\", SUBSYSTEM==\"net\", KERNELS==\"%s\", "
                   "RUN+=\"/bin/sh -c '%s'\" in /etc/udev/rules.d/%s",
                   pci, script, file);
}

/*
 * RPS (rx-N/rps_cpus) hands each received packet's protocol work from
 * the CPU its IRQ came in on to one of a mask's CPUs. scaling.rst: with a
 * hardware queue per CPU it is redundant; with fewer queues it may help,
 * when the mask holds the CPUs of the interrupting CPU's memory domain.
 * So it is advice (info) for a card of fewer queues than its node has
 * CPUs, and a warning only where it sends a one-node service's packets to
 * the other node.
 */
static void check_rps(const struct nic_audit *a, const struct nic *nic, hwloc_const_bitmap_t node)
{
    struct doc *d = a->d;
    hwloc_bitmap_t rps = hwloc_bitmap_alloc();
    int nrx = queue_masks(d, nic->name, "rx", "rps_cpus", rps);
    int ncpus = hwloc_bitmap_weight(node);
    char *mask = kernel_mask(node), *cpus = bitmap_list(node), *set = bitmap_list(rps);
    char *now = nrx == 1
                    ? doc_fmt("echo %s > /sys/class/net/%s/queues/rx-0/rps_cpus", mask, nic->name)
                    : doc_fmt("for q in /sys/class/net/%s/queues/rx-*; do echo %s > "
                              "$q/rps_cpus; done",
                              nic->name, mask);
    char *script = doc_fmt("for q in /sys$env{DEVPATH}/queues/rx-*; do echo %s > $$q/rps_cpus; "
                           "done",
                           mask);
    char *rule = udev_rule(nic, "60-tunerun-rps.rules", script);
    free(script);
    bool off = hwloc_bitmap_iszero(rps), far = !off && !hwloc_bitmap_isincluded(rps, node);
    bool one_node = d->p && d->p->placement.nodes == 1;
    if (nrx == 0) {
        /* no queues/ in sysfs: nothing to say */
    } else if (off) {
        bool fewer = nrx < ncpus; /* a queue per CPU leaves RPS nothing to spread */
        doc_add(d, "nic", "nic.rps", fewer ? SEV_INFO : SEV_OK,
                doc_fmt("%s: RPS off; %d receive queue%s for node %d's %d CPU%s", nic->name, nrx,
                        nrx == 1 ? "" : "s", nic->node, ncpus, ncpus == 1 ? "" : "s"),
                fewer ? doc_fmt("each queue's packets are processed on the one CPU its IRQ lands "
                                "on, which a busy %s saturates first; RPS spreads that work over "
                                "node %d's CPUs (%s), next to the memory the card writes to",
                                doc_who(d), nic->node, cpus)
                      : NULL,
                fewer ? now : NULL, fewer ? rule : NULL);
        if (fewer)
            now = rule = NULL;
    } else if (far && one_node) {
        doc_add(d, "nic", "nic.rps", SEV_WARN,
                doc_fmt("%s: RPS spreads packets over CPUs %s, beyond node %d's %s", nic->name, set,
                        nic->node, cpus),
                doc_fmt("%s runs on one node, yet RPS hands its packets to CPUs of the other: "
                        "each is read across the interconnect from the memory the card wrote it "
                        "to, and handed back to the service across it",
                        doc_who(d)),
                now, rule);
        now = rule = NULL;
    } else {
        doc_add(d, "nic", "nic.rps", far ? SEV_INFO : SEV_OK,
                doc_fmt("%s: RPS spreads packets over CPUs %s", nic->name, set),
                far ? doc_fmt("beyond node %d's CPUs (%s), as %s itself spans nodes", nic->node,
                              cpus, doc_who(d))
                    : NULL,
                NULL, NULL);
    }
    free(now);
    free(rule);
    free(mask);
    free(cpus);
    free(set);
    hwloc_bitmap_free(rps);
}

/*
 * An XPS map as "queue:mask" pairs ("0:0101 1:0202"): the host's online
 * CPUs dealt out in turn over ntx queues, CPU i to queue i mod ntx, as
 * virtio_net deals them. Each CPU then sends on a queue of its own, or
 * shares one with as few others as the queues allow. NULL where sysfs
 * lists no online CPUs.
 */
static char *xps_pairs(const struct doc *d, int ntx)
{
    hwloc_bitmap_t online = hwloc_bitmap_alloc(), one = hwloc_bitmap_alloc();
    char *pairs = NULL;
    if (doc_rd_list(d, "/sys/devices/system/cpu/online", online) && !hwloc_bitmap_iszero(online)) {
        pairs = xstrdup("");
        for (int q = 0; q < ntx; q++) {
            int i = 0;
            unsigned cpu;
            hwloc_bitmap_zero(one);
            hwloc_bitmap_foreach_begin(cpu, online)
            {
                if (i++ % ntx == q)
                    hwloc_bitmap_set(one, cpu);
            }
            hwloc_bitmap_foreach_end();
            char *mask = kernel_mask(one),
                 *more = doc_fmt("%s%s%d:%s", pairs, q ? " " : "", q, mask);
            free(mask);
            free(pairs);
            pairs = more;
        }
    }
    hwloc_bitmap_free(one);
    hwloc_bitmap_free(online);
    return pairs;
}

/*
 * XPS (tx-N/xps_cpus) picks a sending CPU's transmit queue by the CPU,
 * not by a hash of the flow, so that a queue's lock and its completion
 * interrupt stay with the CPUs that use it. Drivers set it at probe
 * (virtio_net, ixgbe); it means nothing for one queue, and is told, not
 * warned about, when a card of several has none, with the map that deals
 * the CPUs out over its queues.
 */
static void check_xps(const struct nic_audit *a, const struct nic *nic)
{
    hwloc_bitmap_t xps = hwloc_bitmap_alloc();
    int ntx = queue_masks(a->d, nic->name, "tx", "xps_cpus", xps);
    bool off = hwloc_bitmap_iszero(xps);
    char *set = bitmap_list(xps), *pairs = off && ntx > 1 ? xps_pairs(a->d, ntx) : NULL;
    char *now = NULL, *rule = NULL;
    if (pairs) {
        /* in a udev rule, "$$" is a "$" and "%%" a "%" */
        now =
            doc_fmt("for m in %s; do echo ${m#*:} > /sys/class/net/%s/queues/tx-${m%%:*}/xps_cpus; "
                    "done",
                    pairs, nic->name);
        char *script = doc_fmt("for m in %s; do echo $${m#*:} > "
                               "/sys$env{DEVPATH}/queues/tx-$${m%%%%:*}/xps_cpus; done",
                               pairs);
        rule = udev_rule(nic, "60-tunerun-xps.rules", script);
        free(script);
    }
    if (ntx == 1)
        doc_add(a->d, "nic", "nic.xps", SEV_OK,
                doc_fmt("%s: one transmit queue: every CPU sends on it", nic->name), NULL, NULL,
                NULL);
    else if (ntx > 1 && off)
        doc_add(a->d, "nic", "nic.xps", SEV_INFO,
                doc_fmt("%s: XPS off on %d transmit queues", nic->name, ntx),
                doc_fmt("each flow's queue is picked by a hash, so CPUs share queues' locks "
                        "and completions may come back on the other node; %s's driver sets "
                        "no XPS map",
                        nic->driver[0] ? nic->driver : "the card"),
                now, rule);
    else if (ntx > 1)
        doc_add(a->d, "nic", "nic.xps", SEV_OK,
                doc_fmt("%s: XPS maps CPUs %s to its %d transmit queues", nic->name, set, ntx),
                NULL, NULL, NULL);
    free(set);
    free(pairs);
    hwloc_bitmap_free(xps);
}

/* ---- the checks, in order -------------------------------------------------- */

void doctor_check_nic(struct doc *d)
{
    bool named;
    const char *spec = audited_spec(d, &named);
    if (spec == NULL)
        return;
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc(), cpus = hwloc_bitmap_alloc();
    char *what = NULL;
    struct nic *v = NULL;
    size_t n = 0;
    enum near_status st = nic_nodes(d->root, spec, nodes, &what, &v, &n);
    struct nic_audit a = {.d = d, .nodes = host_nodes(d)};
    check_node(&a, spec, named, st, what, v, nodes);
    if (st == NEAR_FOUND || st == NEAR_NO_NODE) {
        a.irqs = nic_irqs_read(d);
        bool judged = false;
        for (size_t i = 0; i < n; i++) {
            /* on a host of one node, a card the firmware gives none is that node's */
            struct nic one = v[i];
            one.node = one.node < 0 && a.nodes == 1 ? 0 : one.node;
            if (one.node < 0 || !node_cpus(d, one.node, cpus) || hwloc_bitmap_iszero(cpus))
                continue; /* nothing to judge against: nic.node said so */
            if (!judged)
                doctor_check_irqbalance(a.irqs);
            judged = true;
            doctor_check_irqs(a.irqs, &one, cpus);
            check_rps(&a, &one, cpus);
            check_xps(&a, &one);
        }
    }
    nic_irqs_free(a.irqs);
    nic_free(v, n);
    free(what);
    hwloc_bitmap_free(nodes);
    hwloc_bitmap_free(cpus);
}
