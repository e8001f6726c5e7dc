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
 * node, not with the service's placement, which the plan answers for.
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

#define IRQ_MAX  512       /* queue IRQs of one device told apart (mlx5 has one per CPU) */
#define LIST_MAX 8192      /* a CPU list as sysfs writes it */
#define ENV_MAX  (1 << 16) /* /etc/default/irqbalance: Debian's is 1.4 KiB */

/*
 * One queue's interrupt: its number, its name in /proc/interrupts, and
 * where it is handled: effective_affinity_list where the kernel has it,
 * else smp_affinity_list.
 */
struct irq {
    int n;
    char name[64];
    hwloc_bitmap_t cpus;
};

/* What irqbalance would do, read once for every NIC. */
struct irqbalance {
    int pid;               /* 0 when it does not run */
    hwloc_bitmap_t banned; /* the CPUs it gives no IRQ */
    char banned_from[96];  /* which setting banned them */
    hwloc_bitmap_t banirq; /* the IRQs it leaves alone (--banirq) */
    char args[256];        /* IRQBALANCE_ARGS, as the file sets it */
    bool policyscript;     /* a --policyscript may ban or place any IRQ */
};

/* What the NIC checks share: the host, read once. */
struct nic_audit {
    struct doc *d;
    int nodes;        /* NUMA nodes of the host */
    char *interrupts; /* /proc/interrupts */
    struct irqbalance b;
};

/* ---- what the host says --------------------------------------------------- */

/* A CPU list file under the root into set; false when there is none. */
static bool read_list(const struct doc *d, const char *path, hwloc_bitmap_t set)
{
    char buf[LIST_MAX];
    hwloc_bitmap_zero(set);
    return doc_rd(d, path, buf, sizeof(buf)) && bitmap_parse(set, buf);
}

static bool node_cpus(const struct doc *d, int node, hwloc_bitmap_t set)
{
    char path[96];
    snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
    return read_list(d, path, set);
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

/*
 * A NAME=VALUE line's value, as systemd's EnvironmentFile= reads
 * /etc/default/irqbalance: the last one set, its quotes taken off; NULL
 * when no line sets it (a commented line sets nothing).
 */
static char *env_value(const char *text, const char *name)
{
    char *v = NULL;
    size_t len = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, name, len) != 0 || p[len] != '=')
            continue;
        const char *s = p + len + 1, *end = strchr(s, '\n');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (n >= 2 && (s[0] == '"' || s[0] == '\'') && s[n - 1] == s[0])
            s++, n -= 2;
        free(v);
        v = xasprintf("%.*s", (int)n, s);
    }
    return v;
}

/*
 * What irqbalance's options leave alone: each --banirq's IRQ (also as -i
 * N, or --banirq N), and whether a --policyscript (-l) may ban more.
 */
static void read_args(struct irqbalance *b, const char *args)
{
    char *copy = xstrdup(args), *save = NULL;
    bool banirq_next = false;
    for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        const char *num = banirq_next                        ? t
                          : strncmp(t, "--banirq=", 9) == 0  ? t + 9
                          : strncmp(t, "-i", 2) == 0 && t[2] ? t + 2
                                                             : NULL;
        banirq_next = strcmp(t, "--banirq") == 0 || strcmp(t, "-i") == 0;
        if (num && isdigit((unsigned char)*num))
            hwloc_bitmap_set(b->banirq, (unsigned)strtoul(num, NULL, 10));
        b->policyscript |= strncmp(t, "--policyscript", 14) == 0 || strncmp(t, "-l", 2) == 0;
    }
    free(copy);
}

/*
 * Whether irqbalance runs (a process whose comm is "irqbalance"), and the
 * CPUs it bans, as irqbalance 1.9 (Debian 12's) decides them in
 * setup_banned_cpus(): IRQBALANCE_BANNED_CPUS, a hex mask it calls
 * deprecated, wins when set; then IRQBALANCE_BANNED_CPULIST; else the
 * CPUs the kernel keeps isolated (isolcpus=) or tickless (nohz_full=).
 * Debian's unit reads them from /etc/default/irqbalance.
 */
static void read_irqbalance(struct nic_audit *a)
{
    struct irqbalance *b = &a->b;
    int error;
    char path[64], comm[32];
    DIR *h = doc_opendir(a->d, "/proc", &error);
    for (struct dirent *e; h && b->pid == 0 && (e = readdir(h)) != NULL;) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        snprintf(path, sizeof(path), "/proc/%.16s/comm", e->d_name);
        if (doc_rd(a->d, path, comm, sizeof(comm)) && strcmp(comm, "irqbalance") == 0)
            b->pid = atoi(e->d_name);
    }
    if (h)
        closedir(h);
    char *text = doc_rd_text(a->d, "/etc/default/irqbalance", ENV_MAX);
    char *mask = text ? env_value(text, "IRQBALANCE_BANNED_CPUS") : NULL;
    char *list = text ? env_value(text, "IRQBALANCE_BANNED_CPULIST") : NULL;
    char *args = text ? env_value(text, "IRQBALANCE_ARGS") : NULL;
    if (mask && *mask && hwloc_bitmap_sscanf(b->banned, mask) == 0) {
        snprintf(b->banned_from, sizeof(b->banned_from), "IRQBALANCE_BANNED_CPUS=%.60s", mask);
    } else if (list && *list && bitmap_parse(b->banned, list)) {
        snprintf(b->banned_from, sizeof(b->banned_from), "IRQBALANCE_BANNED_CPULIST=%.60s", list);
    } else {
        hwloc_bitmap_t nohz = hwloc_bitmap_alloc();
        read_list(a->d, "/sys/devices/system/cpu/isolated", b->banned);
        read_list(a->d, "/sys/devices/system/cpu/nohz_full", nohz);
        hwloc_bitmap_or(b->banned, b->banned, nohz);
        hwloc_bitmap_free(nohz);
        snprintf(b->banned_from, sizeof(b->banned_from),
                 "the kernel's isolated and nohz_full CPUs, irqbalance's default");
    }
    snprintf(b->args, sizeof(b->args), "%s", args ? args : "");
    read_args(b, b->args);
    free(mask);
    free(list);
    free(args);
    free(text);
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
                       const char *what, const struct nic *v)
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
            named || a->nodes == 1 || d->p->placement.nodes != 1
                ? NULL
                : doc_fmt("%s runs on one node, which its profile chooses without regard to the "
                          "card: near = default-route in its [placement] puts it on the card's",
                          doc_who(d)),
            NULL, NULL);
}

/* ---- nic.irqs -------------------------------------------------------------- */

/*
 * Whether an interrupt of a NIC serves a queue, by its name: every vector
 * but the one for the link and the card's own events, which drivers name
 * after the interface alone (ixgbe, igb), "-config" (virtio_net),
 * "_async" (mlx5), ":misc" (i40e, ice) or "mgmnt" (ena).
 */
static bool queue_irq(const char *name, const char *ifname)
{
    return strcmp(name, ifname) != 0 && !strstr(name, "config") && !strstr(name, "async") &&
           !strstr(name, "misc") && !strstr(name, "mgmnt");
}

/* The name /proc/interrupts gives IRQ n (its last word), into name; false when not requested. */
static bool irq_name(const char *interrupts, int n, char *name, size_t size)
{
    for (const char *p = interrupts; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        char *end;
        while (*p == ' ')
            p++;
        if (!isdigit((unsigned char)*p) || strtol(p, &end, 10) != n || *end != ':')
            continue;
        const char *eol = strchr(end, '\n'), *w = eol ? eol : end + strlen(end);
        while (w > end && isspace((unsigned char)w[-1]))
            w--;
        const char *s = w;
        while (s > end && !isspace((unsigned char)s[-1]))
            s--;
        snprintf(name, size, "%.*s", (int)(w - s), s);
        return w > s;
    }
    return false;
}

static int by_irq(const void *x, const void *y)
{
    return ((const struct irq *)x)->n - ((const struct irq *)y)->n;
}

/*
 * A device's queue IRQs: its msi_irqs/ holds one entry per vector; those
 * /proc/interrupts names are requested, and each is handled where
 * effective_affinity_list says (the CPUs of smp_affinity_list the kernel
 * really targets), or smp_affinity_list on kernels without it.
 */
static size_t queue_irqs(const struct nic_audit *a, const struct nic *nic, struct irq *v)
{
    char path[512], name[64];
    int error;
    size_t n = 0;
    snprintf(path, sizeof(path), "%s/msi_irqs", nic->dev);
    DIR *h = doc_opendir(a->d, path, &error);
    for (struct dirent *e; h && n < IRQ_MAX && (e = readdir(h)) != NULL;) {
        int irq = atoi(e->d_name);
        if (!isdigit((unsigned char)e->d_name[0]) ||
            !irq_name(a->interrupts, irq, name, sizeof(name)) || !queue_irq(name, nic->name))
            continue;
        v[n] = (struct irq){.n = irq, .cpus = hwloc_bitmap_alloc()};
        snprintf(v[n].name, sizeof(v[n].name), "%s", name);
        snprintf(path, sizeof(path), "/proc/irq/%d/effective_affinity_list", irq);
        bool known = read_list(a->d, path, v[n].cpus) && !hwloc_bitmap_iszero(v[n].cpus);
        snprintf(path, sizeof(path), "/proc/irq/%d/smp_affinity_list", irq);
        if (known || read_list(a->d, path, v[n].cpus))
            n++;
        else
            hwloc_bitmap_free(v[n].cpus);
    }
    if (h)
        closedir(h);
    qsort(v, n, sizeof(*v), by_irq);
    return n;
}

/* How irqbalance treats the IRQs found off the node. */
enum left_alone {
    MOVED,       /* it may move them: none is banned from it */
    BANIRQ,      /* each is banned from it with --banirq */
    POLICY_MAYBE /* not all by --banirq, but a --policyscript may ban them */
};

/*
 * irqbalance bans every CPU of the card's node, so it sends the card's
 * IRQs to the other: the fix bans the rest only, where the ban came from.
 * An empty IRQBALANCE_BANNED_CPULIST is no setting (irqbalance then bans
 * the kernel's isolated CPUs), so a ban of nothing but the node is
 * commented out instead.
 */
static void banned_fix(const struct irqbalance *b, const struct nic *nic, hwloc_const_bitmap_t node,
                       char **fix, char **persist)
{
    hwloc_bitmap_t keep = hwloc_bitmap_alloc();
    hwloc_bitmap_andnot(keep, b->banned, node);
    char *list = bitmap_list(keep);
    bool mask = strncmp(b->banned_from, "IRQBALANCE_BANNED_CPUS=", 23) == 0;
    bool kernel = strncmp(b->banned_from, "IRQBALANCE_", 11) != 0;
    char *change =
        kernel ? doc_fmt("take node %d's CPUs out of isolcpus= and nohz_full= on the kernel "
                         "command line, or IRQBALANCE_BANNED_CPULIST=%s in "
                         "/etc/default/irqbalance if the rest is not empty",
                         nic->node, list)
        : !hwloc_bitmap_iszero(keep)
            ? doc_fmt("IRQBALANCE_BANNED_CPULIST=%s in /etc/default/irqbalance%s", list,
                      mask ? ", and IRQBALANCE_BANNED_CPUS commented out (it wins over the list)"
                           : "")
            : doc_fmt("%s commented out in /etc/default/irqbalance",
                      mask ? "IRQBALANCE_BANNED_CPUS" : "IRQBALANCE_BANNED_CPULIST");
    *fix = doc_fmt("%s (irqbalance bans %s, every CPU of node %d among them), then systemctl "
                   "restart "
                   "irqbalance",
                   change, b->banned_from, nic->node);
    *persist = doc_fmt("%s: irqbalance then keeps %s's IRQs on node %d itself", change, nic->name,
                       nic->node);
    free(change);
    free(list);
    hwloc_bitmap_free(keep);
}

/*
 * The fix for queue IRQs handled off the card's node, which depends on
 * irqbalance. Without it, an affinity written by hand holds until the
 * next boot, when the IRQ numbers may change. With it, an affinity
 * written by hand holds only for an IRQ banned from it; any other it
 * places on the node sysfs gives the device (placement.c,
 * place_irq_in_node()), unless every CPU of that node is banned. It
 * writes an IRQ's affinity only when it moves the IRQ itself (activate.c,
 * activate_mapping()): every IRQ when it starts, later only those their
 * load moves. So an IRQ moved off the node by hand after it started stays
 * there until irqbalance restarts, however long it runs.
 */
static void irqs_fix(const struct nic_audit *a, const struct nic *nic, const char *cpus,
                     hwloc_const_bitmap_t node, const char *off, enum left_alone left, char **fix,
                     char **persist)
{
    const struct irqbalance *b = &a->b;
    char *now =
        strchr(off, ' ')
            ? doc_fmt("for i in %s; do echo %s > /proc/irq/$i/smp_affinity_list; done", off, cpus)
            : doc_fmt("echo %s > /proc/irq/%s/smp_affinity_list", cpus, off);
    if (b->pid == 0) {
        *fix = now;
        *persist = doc_fmt("a oneshot unit, as IRQ numbers change between boots: "
                           "/etc/systemd/system/tunerun-irq-%s.service with [Unit] "
                           "After=network-online.target, [Service] Type=oneshot and "
                           "ExecStart=/bin/sh -c 'for i in %s/msi_irqs/*; do echo %s > "
                           "/proc/irq/$${i##*/}/smp_affinity_list; done', [Install] "
                           "WantedBy=multi-user.target; then systemctl enable it",
                           nic->name, nic->dev, cpus);
        return;
    }
    if (left != MOVED) {
        *fix = doc_fmt("%s (irqbalance leaves them alone: %s)", now,
                       left == BANIRQ ? "--banirq" : "its --policyscript may ban them");
        *persist =
            left == BANIRQ
                ? doc_fmt("take their --banirq out of IRQBALANCE_ARGS in /etc/default/irqbalance "
                          "(it has \"%s\"), and irqbalance keeps them on node %d itself, whatever "
                          "their numbers at the next boot",
                          b->args, nic->node)
                : doc_fmt("have irqbalance's policy script (IRQBALANCE_ARGS=\"%s\" in "
                          "/etc/default/irqbalance) print ban=false for %s's IRQs, and irqbalance "
                          "keeps them on node %d itself",
                          b->args, nic->dev, nic->node);
    } else if (hwloc_bitmap_isincluded(node, b->banned)) {
        banned_fix(b, nic, node, fix, persist);
    } else {
        *fix = doc_fmt("systemctl restart irqbalance: it places every IRQ on its device's node "
                       "(%d here) when it starts, but one whose affinity was written after that "
                       "stays where it was written until its load moves it",
                       nic->node);
        *persist = doc_fmt("irqbalance, left running, places them on node %d at each start; "
                           "whatever wrote their affinity after it (a tuning script, a driver's "
                           "set_irq_affinity script) must not run again",
                           nic->node);
    }
    free(now);
}

/*
 * Each queue IRQ whose effective CPUs all lie off the card's node is a
 * warning: the packets it announces are handled a node away from the
 * memory the card wrote them to.
 */
static void check_irqs(const struct nic_audit *a, const struct nic *nic, hwloc_const_bitmap_t node)
{
    struct doc *d = a->d;
    struct irq *v = xcalloc(IRQ_MAX, sizeof(*v));
    size_t n = queue_irqs(a, nic, v), nout = 0;
    char *cpus = bitmap_list(node), *off = xstrdup(""), *shown = xstrdup("");
    bool banirq = true; /* every IRQ off the node is banned from irqbalance */
    for (size_t i = 0; i < n; i++) {
        if (hwloc_bitmap_intersects(v[i].cpus, node))
            continue;
        char *on = bitmap_list(v[i].cpus);
        char *o = doc_fmt("%s%s%d", off, nout ? " " : "", v[i].n);
        char *s = nout < 8 ? doc_fmt("%s%s%d %s on CPU %s", shown, nout ? ", " : "", v[i].n,
                                     v[i].name, on)
                           : xstrdup(shown);
        free(on);
        free(off);
        free(shown);
        off = o, shown = s;
        banirq &= hwloc_bitmap_isset(a->b.banirq, (unsigned)v[i].n);
        nout++;
    }
    if (n == 0) {
        doc_add(d, "nic", "nic.irqs", SEV_INFO,
                doc_fmt("%s: no queue IRQs under %s/msi_irqs that /proc/interrupts names",
                        nic->name, nic->dev),
                doc_fmt("a card without MSI-X shares one interrupt line, or its driver requests "
                        "its IRQs only when the interface is up"),
                NULL, NULL);
    } else if (nout == 0) {
        doc_add(d, "nic", "nic.irqs", SEV_OK,
                doc_fmt("%s: all %zu queue IRQs handled on node %d (CPUs %s)", nic->name, n,
                        nic->node, cpus),
                NULL, NULL, NULL);
    } else {
        char *fix, *persist;
        irqs_fix(a, nic, cpus, node, off,
                 banirq              ? BANIRQ
                 : a->b.policyscript ? POLICY_MAYBE
                                     : MOVED,
                 &fix, &persist);
        doc_add(d, "nic", "nic.irqs", SEV_WARN,
                doc_fmt("%s: %zu of %zu queue IRQs handled off node %d (CPUs %s): %s%s", nic->name,
                        nout, n, nic->node, cpus, shown, nout > 8 ? ", ..." : ""),
                doc_fmt("the card writes each packet into node %d's memory; a queue whose "
                        "interrupt lands on the other node has its packets read across the "
                        "interconnect, and %s's replies cross it again: latency on every "
                        "request, and interconnect bandwidth it shares with everything else",
                        nic->node, doc_who(d)),
                fix, persist);
    }
    for (size_t i = 0; i < n; i++)
        hwloc_bitmap_free(v[i].cpus);
    free(v);
    free(cpus);
    free(off);
    free(shown);
}

/* ---- nic.irqbalance -------------------------------------------------------- */

/* Whether irqbalance runs, and what it is told: the fix for misplaced IRQs goes through it. */
static void check_irqbalance(const struct nic_audit *a)
{
    const struct irqbalance *b = &a->b;
    if (b->pid == 0 && a->d->container) { /* a container sees its own processes only */
        doc_add(a->d, "nic", "nic.irqbalance", SEV_INFO,
                doc_fmt("irqbalance is not seen from inside a container"),
                doc_fmt("if the host runs it, it places the card's IRQs, and their fix goes "
                        "through the host's /etc/default/irqbalance"),
                NULL, NULL);
        return;
    }
    if (b->pid == 0) {
        doc_add(a->d, "nic", "nic.irqbalance", SEV_OK,
                doc_fmt("irqbalance does not run: each IRQ stays where its driver or an admin "
                        "put it"),
                NULL, NULL, NULL);
        return;
    }
    char *banned = bitmap_list(b->banned), *irqs = bitmap_list(b->banirq);
    doc_add(a->d, "nic", "nic.irqbalance", SEV_INFO,
            doc_fmt("irqbalance runs (pid %d); banned CPUs: %s (%s); banned IRQs: %s%s%s%s", b->pid,
                    banned, b->banned_from, irqs, b->args[0] ? "; IRQBALANCE_ARGS=\"" : "", b->args,
                    b->args[0] ? "\"" : ""),
            doc_fmt("at its start it places each IRQ on its device's node where sysfs gives one, "
                    "never on a banned CPU, and every 10 s it moves those their load calls for: "
                    "an affinity written by hand holds for good only for an IRQ it leaves alone "
                    "(--banirq, or ban=true from a --policyscript), and it reads "
                    "/etc/default/irqbalance only when it starts"),
            NULL, NULL);
    free(banned);
    free(irqs);
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
    char *rule = doc_fmt("SUBSYSTEM==\"queues\", ACTION==\"add\", "
                         "DEVPATH==\"*/net/%s/queues/rx-*\", ATTR{rps_cpus}=\"%s\" in "
                         "/etc/udev/rules.d/60-tunerun-rps.rules",
                         nic->name, mask);
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
 * XPS (tx-N/xps_cpus) picks a sending CPU's transmit queue by the CPU,
 * not by a hash of the flow, so that a queue's lock and its completion
 * interrupt stay with the CPUs that use it. Drivers set it at probe
 * (virtio_net, ixgbe); it means nothing for one queue, and is told, not
 * warned about, when a card of several has none.
 */
static void check_xps(const struct nic_audit *a, const struct nic *nic)
{
    hwloc_bitmap_t xps = hwloc_bitmap_alloc();
    int ntx = queue_masks(a->d, nic->name, "tx", "xps_cpus", xps);
    bool off = hwloc_bitmap_iszero(xps);
    char *set = bitmap_list(xps);
    if (ntx == 1)
        doc_add(a->d, "nic", "nic.xps", SEV_OK,
                doc_fmt("%s: one transmit queue: every CPU sends on it", nic->name), NULL, NULL,
                NULL);
    else if (ntx > 1)
        doc_add(
            a->d, "nic", "nic.xps", off ? SEV_INFO : SEV_OK,
            off ? doc_fmt("%s: XPS off on %d transmit queues", nic->name, ntx)
                : doc_fmt("%s: XPS maps CPUs %s to its %d transmit queues", nic->name, set, ntx),
            off ? doc_fmt("each flow's queue is picked by a hash, so CPUs share queues' locks "
                          "and completions may come back on the other node; %s's driver sets "
                          "no XPS map",
                          nic->driver[0] ? nic->driver : "the card")
                : NULL,
            NULL, NULL);
    free(set);
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
    a.b.banned = hwloc_bitmap_alloc();
    a.b.banirq = hwloc_bitmap_alloc();
    check_node(&a, spec, named, st, what, v);
    if (st == NEAR_FOUND || st == NEAR_NO_NODE) {
        a.interrupts = doc_rd_text(d, "/proc/interrupts", INERT_MAX);
        read_irqbalance(&a);
        bool judged = false;
        for (size_t i = 0; i < n; i++) {
            /* on a host of one node, a card the firmware gives none is that node's */
            struct nic one = v[i];
            one.node = one.node < 0 && a.nodes == 1 ? 0 : one.node;
            if (one.node < 0 || !node_cpus(d, one.node, cpus) || hwloc_bitmap_iszero(cpus))
                continue; /* nothing to judge against: nic.node said so */
            if (!judged)
                check_irqbalance(&a);
            judged = true;
            check_irqs(&a, &one, cpus);
            check_rps(&a, &one, cpus);
            check_xps(&a, &one);
        }
    }
    free(a.interrupts);
    hwloc_bitmap_free(a.b.banned);
    hwloc_bitmap_free(a.b.banirq);
    nic_free(v, n);
    free(what);
    hwloc_bitmap_free(nodes);
    hwloc_bitmap_free(cpus);
}
