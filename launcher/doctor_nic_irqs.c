/*
 * doctor_nic_irqs.c - where a NIC's queue interrupts are handled, and
 * irqbalance, which places them: doctor's nic.irqs and nic.irqbalance,
 * for doctor_nic.c, which knows the card and its node.
 *
 * A card with MSI-X raises one interrupt per queue (msi_irqs/ under its
 * PCI function), and the CPU that handles it runs the queue's softirq: the
 * protocol work of each packet, next to the memory the card wrote it to
 * when that CPU is on the card's node. What decides that CPU is the IRQ's
 * affinity, and on most hosts irqbalance writes it: when it starts it puts
 * each device's IRQs on the device's node, never on a CPU it is told to
 * ban, and leaves alone an IRQ it is told to (--banirq, a policy
 * script's ban=true). So the fix for an IRQ off the node goes through
 * irqbalance's own settings (/etc/default/irqbalance) wherever it runs,
 * since it would undo a raw smp_affinity write sooner or later, and
 * through smp_affinity only for the IRQs it leaves alone or where it does
 * not run. What irqbalance does is read from its 1.9 source (Debian 12's).
 *
 * Like the rest of doctor, it reads under the root and changes nothing.
 */
#include "doctor_internal.h"
#include "nic.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IRQ_MAX 512       /* queue IRQs of one device told apart (mlx5 has one per CPU) */
#define ENV_MAX (1 << 16) /* /etc/default/irqbalance: Debian's is 1.4 KiB */

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

/* What the IRQ checks share: read once for every NIC. */
struct nic_irqs {
    struct doc *d;
    char *interrupts; /* /proc/interrupts */
    struct irqbalance b;
};

/* ---- what the host says --------------------------------------------------- */

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
static void read_irqbalance(struct nic_irqs *a)
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
        doc_rd_list(a->d, "/sys/devices/system/cpu/isolated", b->banned);
        doc_rd_list(a->d, "/sys/devices/system/cpu/nohz_full", nohz);
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

struct nic_irqs *nic_irqs_read(struct doc *d)
{
    struct nic_irqs *a = xcalloc(1, sizeof(*a));
    a->d = d;
    a->interrupts = doc_rd_text(d, "/proc/interrupts", INERT_MAX);
    a->b.banned = hwloc_bitmap_alloc();
    a->b.banirq = hwloc_bitmap_alloc();
    read_irqbalance(a);
    return a;
}

void nic_irqs_free(struct nic_irqs *a)
{
    if (a == NULL)
        return;
    free(a->interrupts);
    hwloc_bitmap_free(a->b.banned);
    hwloc_bitmap_free(a->b.banirq);
    free(a);
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
static size_t queue_irqs(const struct nic_irqs *a, const struct nic *nic, struct irq *v)
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
        bool known = doc_rd_list(a->d, path, v[n].cpus) && !hwloc_bitmap_iszero(v[n].cpus);
        snprintf(path, sizeof(path), "/proc/irq/%d/smp_affinity_list", irq);
        if (known || doc_rd_list(a->d, path, v[n].cpus))
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
static void irqs_fix(const struct nic_irqs *a, const struct nic *nic, const char *cpus,
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
void doctor_check_irqs(const struct nic_irqs *a, const struct nic *nic, hwloc_const_bitmap_t node)
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
void doctor_check_irqbalance(const struct nic_irqs *a)
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
