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
 * ban, and leaves alone an IRQ it is told to (--banirq, --banmod, a
 * policy script's ban=true). So the fix for an IRQ off the node goes
 * through irqbalance's own settings (/etc/default/irqbalance) wherever it
 * runs, since it would undo a raw smp_affinity write sooner or later, and
 * through smp_affinity only for the IRQs it leaves alone or where it does
 * not run. What irqbalance does is read from its 1.9 source (Debian 12's).
 *
 * Like the rest of doctor, it reads under the root and changes nothing.
 */
#include "doctor_internal.h"
#include "nic.h"
#include "util.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IRQ_MAX 512       /* queue IRQs of one device told apart (mlx5 has one per CPU) */
#define ENV_MAX (1 << 16) /* /etc/default/irqbalance: Debian's is 1.4 KiB */
/*
 * Above any IRQ number: x86's NR_IRQS is 64 a CPU, about 512 Ki for the
 * 8192 CPUs Debian builds for. A --banirq beyond it bans nothing, and is
 * not made a bitmap of that many bits (4294967295 would be 512 MiB).
 */
#define IRQ_NUMBER_LIMIT (1UL << 20)

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
    char banmod[4][32];    /* the modules whose IRQs it leaves alone (--banmod), the first 4 */
    size_t nbanmod;
    char args[256];    /* IRQBALANCE_ARGS, as the file sets it */
    bool policyscript; /* a --policyscript may ban or place any IRQ */
};

/* An IRQ /proc/interrupts lists, and the name its driver requested it by (the line's last word). */
struct irq_name {
    int n;
    char name[64];
};

/* What the IRQ checks share: read once for every NIC. */
struct nic_irqs {
    struct doc *d;
    struct irq_name *names; /* /proc/interrupts, by IRQ */
    size_t nnames;
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
 * An option's value in IRQBALANCE_ARGS, however it is spelled: "--banirq=62",
 * "-i62", or "--banirq" or "-i" with the value as the next word (*next
 * then asks for it). NULL when t is not that option, or not yet its value.
 */
static const char *option_value(const char *t, const char *lng, const char *shrt, bool *next)
{
    size_t len = strlen(lng);
    const char *v = *next                                        ? t
                    : strncmp(t, lng, len) == 0 && t[len] == '=' ? t + len + 1
                    : strncmp(t, shrt, 2) == 0 && t[2]           ? t + 2
                                                                 : NULL;
    *next = strcmp(t, lng) == 0 || strcmp(t, shrt) == 0;
    return v;
}

/*
 * What irqbalance's options leave alone: each --banirq's IRQ (-i), each
 * --banmod's module (-m), and whether a --policyscript (-l) may ban more.
 */
static void read_args(struct irqbalance *b, const char *args)
{
    char *copy = xstrdup(args), *save = NULL;
    bool irq_next = false, mod_next = false;
    for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        const char *num = option_value(t, "--banirq", "-i", &irq_next);
        const char *mod = option_value(t, "--banmod", "-m", &mod_next);
        unsigned long irq =
            num && isdigit((unsigned char)*num) ? strtoul(num, NULL, 10) : ULONG_MAX;
        if (irq < IRQ_NUMBER_LIMIT)
            hwloc_bitmap_set(b->banirq, (unsigned)irq);
        if (mod && b->nbanmod < sizeof(b->banmod) / sizeof(b->banmod[0]))
            snprintf(b->banmod[b->nbanmod++], sizeof(b->banmod[0]), "%s", mod);
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

static int by_number(const void *x, const void *y)
{
    return ((const struct irq_name *)x)->n - ((const struct irq_name *)y)->n;
}

/*
 * /proc/interrupts as a table of the IRQs it lists by number, sorted, read
 * once: on a host of many CPUs each line is kilobytes long and a card may
 * have hundreds of queues, so finding each queue's line in the text again
 * would read it hundreds of times.
 */
static void read_interrupts(struct nic_irqs *a)
{
    char *text = doc_rd_text(a->d, "/proc/interrupts", INERT_MAX);
    size_t room = 0;
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        char *end;
        while (*p == ' ')
            p++;
        long n = isdigit((unsigned char)*p) ? strtol(p, &end, 10) : -1;
        if (n < 0 || n > INT_MAX || *end != ':')
            continue;
        const char *eol = strchr(end, '\n'), *w = eol ? eol : end + strlen(end);
        while (w > end && isspace((unsigned char)w[-1]))
            w--;
        const char *s = w;
        while (s > end && !isspace((unsigned char)s[-1]))
            s--;
        if (w == s)
            continue;
        if (a->nnames == room)
            a->names = xrealloc(a->names, (room = room ? 2 * room : 256) * sizeof(*a->names));
        struct irq_name *e = &a->names[a->nnames++];
        e->n = (int)n;
        snprintf(e->name, sizeof(e->name), "%.*s", (int)(w - s), s);
    }
    free(text);
    if (a->nnames)
        qsort(a->names, a->nnames, sizeof(*a->names), by_number);
}

struct nic_irqs *nic_irqs_read(struct doc *d)
{
    struct nic_irqs *a = xcalloc(1, sizeof(*a));
    a->d = d;
    read_interrupts(a);
    a->b.banned = hwloc_bitmap_alloc();
    a->b.banirq = hwloc_bitmap_alloc();
    read_irqbalance(a);
    return a;
}

void nic_irqs_free(struct nic_irqs *a)
{
    if (a == NULL)
        return;
    free(a->names);
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

/* The name /proc/interrupts gives IRQ n, or NULL where it lists none (not requested). */
static const char *irq_name(const struct nic_irqs *a, int n)
{
    struct irq_name key = {.n = n};
    const struct irq_name *e =
        a->nnames ? bsearch(&key, a->names, a->nnames, sizeof(*a->names), by_number) : NULL;
    return e ? e->name : NULL;
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
    char path[512];
    int error;
    size_t n = 0;
    snprintf(path, sizeof(path), "%s/msi_irqs", nic->dev);
    DIR *h = doc_opendir(a->d, path, &error);
    for (struct dirent *e; h && n < IRQ_MAX && (e = readdir(h)) != NULL;) {
        int irq = atoi(e->d_name);
        const char *name = isdigit((unsigned char)e->d_name[0]) ? irq_name(a, irq) : NULL;
        if (name == NULL || !queue_irq(name, nic->name))
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

/* The queue IRQs found off the card's node, as their fix needs them. */
struct off_node {
    char *all;    /* each one's number, separated by spaces */
    char *alone;  /* those irqbalance leaves alone, "" for none */
    char *placed; /* those it places, "" for none */
    char how[96]; /* what leaves them alone: "--banirq", "--banmod=ixgbe", or both */
};

/* The name of the driver bound to the card's PCI function, "" when none is. */
static void pci_driver(const struct doc *d, const struct nic *nic, char *name, size_t n)
{
    char path[512], at[8192], to[512];
    snprintf(path, sizeof(path), "%s/driver", nic->dev);
    doc_at_root(d, path, at, sizeof(at));
    ssize_t len = readlink(at, to, sizeof(to) - 1);
    to[len > 0 ? len : 0] = '\0';
    const char *base = strrchr(to, '/') ? strrchr(to, '/') + 1 : to;
    snprintf(name, n, "%.*s", (int)(n - 1), base); /* a driver's name is short: 64 is plenty */
}

/*
 * Whether irqbalance leaves IRQ q alone, as classify.c's
 * check_for_irq_ban() decides it: its number given to --banirq, or a
 * --banmod name within the name of the driver of the card's PCI function
 * (virtio-pci for a virtio NIC, not virtio_net) or within the IRQ's own
 * name. What bans it is added to o->how.
 */
static bool left_alone(const struct irqbalance *b, const char *driver, const struct irq *q,
                       struct off_node *o)
{
    char mod[48] = "";
    const char *by = hwloc_bitmap_isset(b->banirq, (unsigned)q->n) ? "--banirq" : NULL;
    for (size_t k = 0; by == NULL && k < b->nbanmod; k++)
        if (strstr(driver, b->banmod[k]) || strstr(q->name, b->banmod[k])) {
            snprintf(mod, sizeof(mod), "--banmod=%s", b->banmod[k]);
            by = mod;
        }
    size_t used = strlen(o->how);
    if (by && !strstr(o->how, by))
        snprintf(o->how + used, sizeof(o->how) - used, "%s%s", used ? " and " : "", by);
    return by != NULL;
}

/* The command that writes the node's CPUs as the affinity of each IRQ of list ("62 63"). */
static char *affinity_now(const char *list, const char *cpus)
{
    return strchr(list, ' ')
               ? doc_fmt("for i in %s; do echo %s > /proc/irq/$i/smp_affinity_list; done", list,
                         cpus)
               : doc_fmt("echo %s > /proc/irq/%s/smp_affinity_list", cpus, list);
}

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
 * The fix for the IRQs off the node that irqbalance places (placed, its
 * numbers): why it did not place them on the card's node. If every CPU of
 * the node is banned, the ban. Else it wrote their affinity there when it
 * started, and something wrote another since: it writes an IRQ's affinity
 * only when it moves the IRQ itself (activate.c, activate_mapping()), at
 * its start, and later only for those their load moves. So they stay off
 * the node until irqbalance restarts, however long it runs. A policy
 * script may ban them too, which doctor cannot run to know.
 */
static void placed_fix(const struct nic_irqs *a, const struct nic *nic, hwloc_const_bitmap_t node,
                       const char *cpus, const char *placed, char **fix, char **persist)
{
    const struct irqbalance *b = &a->b;
    if (hwloc_bitmap_isincluded(node, b->banned)) {
        banned_fix(b, nic, node, fix, persist);
    } else if (b->policyscript) {
        char *now = affinity_now(placed, cpus);
        *fix = doc_fmt("%s, if irqbalance's --policyscript bans them (ban=true); if it does not, "
                       "systemctl restart irqbalance places them on node %d",
                       now, nic->node);
        *persist = doc_fmt("have irqbalance's policy script (IRQBALANCE_ARGS=\"%s\" in "
                           "/etc/default/irqbalance) print ban=false for %s's IRQs, then "
                           "systemctl restart irqbalance: it keeps them on node %d itself",
                           b->args, nic->dev, nic->node);
        free(now);
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
}

/*
 * The fix for queue IRQs handled off the card's node, which depends on
 * irqbalance. Without it, an affinity written by hand holds until the
 * next boot, when the IRQ numbers may change. With it, an affinity
 * written by hand holds only for an IRQ it leaves alone; any other it
 * places on the node sysfs gives the device (placement.c,
 * place_irq_in_node()), unless every CPU of that node is banned. Where
 * it leaves some alone and places the rest, the fix is both.
 */
static void irqs_fix(const struct nic_irqs *a, const struct nic *nic, const char *cpus,
                     hwloc_const_bitmap_t node, const struct off_node *o, char **fix,
                     char **persist)
{
    const struct irqbalance *b = &a->b;
    if (b->pid == 0) {
        *fix = affinity_now(o->all, cpus);
        /*
         * After= alone orders the unit only where something else pulls
         * network-online.target in; Wants= pulls it in, so that the unit
         * runs once the interfaces are up and their drivers have their
         * vectors. Their msi_irqs/ is the PCI function's, whose path no
         * rename of the interface changes.
         */
        *persist = doc_fmt("a oneshot unit, as IRQ numbers change between boots: "
                           "/etc/systemd/system/tunerun-irq-%s.service with [Unit] "
                           "Wants=network-online.target and After=network-online.target, "
                           "[Service] Type=oneshot and "
                           "ExecStart=/bin/sh -c 'for i in %s/msi_irqs/*; do echo %s > "
                           "/proc/irq/$${i##*/}/smp_affinity_list; done', [Install] "
                           "WantedBy=multi-user.target; then systemctl enable it",
                           nic->name, nic->dev, cpus);
        return;
    }
    char *pf = NULL, *pp = NULL, *af = NULL, *ap = NULL;
    if (*o->placed)
        placed_fix(a, nic, node, cpus, o->placed, &pf, &pp);
    if (*o->alone) {
        char *now = affinity_now(o->alone, cpus);
        bool one = strchr(o->alone, ' ') == NULL;
        af = doc_fmt("%s (irqbalance leaves %s alone: %s)", now, one ? "it" : "them", o->how);
        ap = doc_fmt("IRQBALANCE_ARGS in /etc/default/irqbalance without %s for %s (it has "
                     "\"%s\"), then systemctl restart irqbalance: it keeps %s on node %d itself, "
                     "whatever %s numbers at the next boot",
                     o->how, o->alone, b->args, one ? "it" : "them", nic->node,
                     one ? "its" : "their");
        free(now);
    }
    *fix = pf && af ? doc_fmt("%s; and %s", pf, af) : xstrdup(pf ? pf : af);
    *persist = pp && ap ? doc_fmt("%s; and %s", pp, ap) : xstrdup(pp ? pp : ap);
    free(pf);
    free(pp);
    free(af);
    free(ap);
}

/* A list of numbers, one more added: "62", then "62 63". */
static void list_add(char **list, int n)
{
    char *more = doc_fmt("%s%s%d", *list, **list ? " " : "", n);
    free(*list);
    *list = more;
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
    char *cpus = bitmap_list(node), *shown = xstrdup(""), driver[64];
    struct off_node o = {.all = xstrdup(""), .alone = xstrdup(""), .placed = xstrdup("")};
    pci_driver(d, nic, driver, sizeof(driver));
    for (size_t i = 0; i < n; i++) {
        if (hwloc_bitmap_intersects(v[i].cpus, node))
            continue;
        char *on = bitmap_list(v[i].cpus);
        char *s = nout < 8 ? doc_fmt("%s%s%d %s on CPU %s", shown, nout ? ", " : "", v[i].n,
                                     v[i].name, on)
                           : xstrdup(shown);
        free(on);
        free(shown);
        shown = s;
        list_add(&o.all, v[i].n);
        list_add(left_alone(&a->b, driver, &v[i], &o) ? &o.alone : &o.placed, v[i].n);
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
        irqs_fix(a, nic, cpus, node, &o, &fix, &persist);
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
    free(shown);
    free(o.all);
    free(o.alone);
    free(o.placed);
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
                    "(--banirq, --banmod, or ban=true from a --policyscript), and it reads "
                    "/etc/default/irqbalance only when it starts"),
            NULL, NULL);
    free(banned);
    free(irqs);
}
