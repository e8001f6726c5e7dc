/*
 * nic.c - `near` for a network interface: the interface a profile names
 * (by name, by an address of this host, or as the default route's), the
 * physical devices under it, and the NUMA node each hangs off.
 *
 * It is disk.c's twin. Where disk.c goes from a path to its mount, its
 * block device and down through partitions, md and LVM to the disks, this
 * goes from an interface down through bonds, VLANs, bridges, macvlans and
 * teams to the NICs, and asks sysfs which node each NIC's PCI function is
 * on. The kernel says all of it in a few files:
 *
 *   /sys/class/net/IF            a link to the interface's own directory
 *   IF/lower_NAME                the interfaces right under a stacked one
 *   IF/brif/NAME                 a bridge's ports (lower_NAME too, on current kernels)
 *   IF/device                    only a physical interface has one
 *   IF/device/numa_node          or its parent's, for a virtio NIC
 *   /proc/net/route, ipv6_route  the default route
 *   /proc/net/fib_trie, if_inet6 this host's addresses, under another root
 *
 * What it finds is reported, never guessed: a NIC whose firmware gives it
 * no node is said to have none, and the planner decides what that means.
 * Every file is read under `root`, so doctor's fixture trees work the same.
 */
#include "nic.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NIC_DEPTH  8  /* a VLAN on a bond under a bridge is 3; a loop would be endless */
#define NIC_VISITS 64 /* interfaces one walk looks at, stacked ones included */
#define NIC_SHOWN  8  /* devices a plan names one by one */

/* ---- the three spellings ------------------------------------------------ */

/* A `near` value that names a NIC, taken apart. */
struct spec {
    enum { SPEC_NETDEV, SPEC_IP, SPEC_ROUTE } kind;
    char ifname[IFNAMSIZ];  /* netdev: */
    int family;             /* ip: AF_INET or AF_INET6 */
    unsigned char addr[16]; /* ip: the address, in network order */
    bool any;               /* ip: 0.0.0.0 or ::, which are every interface's */
};

bool nic_spec(const char *near)
{
    return strncmp(near, NIC_NETDEV_PREFIX, strlen(NIC_NETDEV_PREFIX)) == 0 ||
           strncmp(near, NIC_IP_PREFIX, strlen(NIC_IP_PREFIX)) == 0 ||
           strcmp(near, NIC_DEFAULT_ROUTE) == 0;
}

/*
 * Why name is no interface name the kernel would give, or NULL. These are
 * the rules of dev_valid_name() in net/core/dev.c. A ':' was how old tools
 * named a second address of an interface ("eth0:1"); that is a label on
 * eth0's address, not an interface of its own.
 */
static const char *name_why(const char *name)
{
    if (*name == '\0')
        return "netdev: names no interface (netdev:eth0, netdev:bond0)";
    if (strlen(name) >= IFNAMSIZ)
        return "an interface name is at most 15 characters";
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return "'.' and '..' are not interface names";
    for (const char *c = name; *c; c++) {
        if (*c == ':')
            return "an interface name has no ':' (eth0:1 is a label on an address of eth0: name "
                   "eth0)";
        if (*c == '/' || isspace((unsigned char)*c))
            return "an interface name has no '/' and no white space";
    }
    return NULL;
}

/*
 * Why text is no address for ip:, or NULL with the address in *s. An IPv6
 * address may stand in brackets, as in a URL or a listen directive
 * ("[2001:db8::5]"). A zone ("fe80::1%eth0") is refused: the same
 * link-local address may be on every interface, and the zone names the
 * interface, which netdev: does plainly.
 */
static const char *addr_why(const char *text, struct spec *s)
{
    char buf[INET6_ADDRSTRLEN + 2];
    size_t len = strlen(text);
    bool bracketed = text[0] == '[';
    if (len == 0)
        return "ip: names no address (ip:10.0.0.5, ip:[2001:db8::5])";
    if (bracketed && (len < 2 || text[len - 1] != ']'))
        return "an IPv6 address in brackets needs its closing ']'";
    if (bracketed) {
        text++;
        len -= 2;
    }
    if (memchr(text, '%', len))
        return "an address with a zone (%eth0) is not taken: name the interface with netdev:";
    if (len >= sizeof(buf))
        return "not an IPv4 or IPv6 address";
    memcpy(buf, text, len);
    buf[len] = '\0';
    static const unsigned char zeros[16];
    if (!bracketed && inet_pton(AF_INET, buf, s->addr) == 1)
        s->family = AF_INET;
    else if (inet_pton(AF_INET6, buf, s->addr) == 1)
        s->family = AF_INET6;
    else
        return bracketed ? "not an IPv6 address in its brackets" : "not an IPv4 or IPv6 address";
    s->any = memcmp(s->addr, zeros, s->family == AF_INET ? 4 : 16) == 0;
    return NULL;
}

/* Why near is no NIC spelling, or NULL with it taken apart into *s. */
static const char *spec_why(const char *near, struct spec *s)
{
    *s = (struct spec){0};
    if (strcmp(near, NIC_DEFAULT_ROUTE) == 0) {
        s->kind = SPEC_ROUTE;
        return NULL;
    }
    if (strncmp(near, NIC_IP_PREFIX, strlen(NIC_IP_PREFIX)) == 0) {
        s->kind = SPEC_IP;
        return addr_why(near + strlen(NIC_IP_PREFIX), s);
    }
    if (strncmp(near, NIC_NETDEV_PREFIX, strlen(NIC_NETDEV_PREFIX)) != 0)
        return "not netdev:IF, ip:ADDR or default-route";
    s->kind = SPEC_NETDEV;
    const char *name = near + strlen(NIC_NETDEV_PREFIX), *why = name_why(name);
    if (why == NULL)
        snprintf(s->ifname, sizeof(s->ifname), "%s", name);
    return why;
}

/* The reason ip:0.0.0.0 or ip::: is refused, after the spec as written. */
#define ANY_WHY "listens on every interface; name one with netdev:IF or use default-route"

bool nic_spec_valid(const char *near, const char **why)
{
    struct spec s;
    *why = spec_why(near, &s);
    if (*why == NULL && s.any)
        *why = s.family == AF_INET ? "0.0.0.0 " ANY_WHY : ":: " ANY_WHY;
    return *why == NULL;
}

/* ---- sysfs's links ------------------------------------------------------ */

/*
 * The path a link's text leads to from the link at `at`, both under root
 * as the kernel names them: the text joined to the link's directory, each
 * ".." taking a component off, and none leading above root.
 */
static char *joined(const char *at, const char *to)
{
    const char *slash = strrchr(at, '/');
    char *path = to[0] == '/' ? xstrdup(to) : xasprintf("%.*s/%s", (int)(slash - at), at, to);
    char *out = xrealloc(NULL, strlen(path) + 2), *save;
    size_t o = 0;
    for (char *c = strtok_r(path, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, "..") == 0) {
            while (o > 0 && out[--o] != '/')
                ;
        } else if (strcmp(c, ".") != 0) {
            o += (size_t)sprintf(out + o, "/%s", c);
        }
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    free(path);
    return out;
}

/*
 * Where the link at `at` leads ("/sys/class/net/eth0" ->
 * "/sys/devices/pci0000:00/0000:00:03.0/net/eth0"), as joined() makes it;
 * NULL when there is nothing there. sysfs's links are relative and lead
 * through real directories only, so one readlink(2) does what realpath(3)
 * would do reading every component, and a fixture's root needs to be no
 * real path. A directory that is no link stands for itself. Made on the
 * heap, as disk.c's paths are: the walk recurses.
 */
static char *follow(const char *pre, const char *at)
{
    char *full = xasprintf("%s%s", pre, at), *to = xrealloc(NULL, PATH_MAX), *out = NULL;
    ssize_t len = readlink(full, to, PATH_MAX - 1);
    struct stat st;
    if (len > 0) {
        to[len] = '\0';
        out = joined(at, to);
    } else if (len < 0 && errno == EINVAL && stat(full, &st) == 0 && S_ISDIR(st.st_mode)) {
        out = xstrdup(at);
    }
    free(full);
    free(to);
    return out;
}

static bool has(const char *pre, const char *dir, const char *rel)
{
    char *path = xasprintf("%s%s/%s", pre, dir, rel);
    bool ok = access(path, F_OK) == 0;
    free(path);
    return ok;
}

/* ---- down the stack ----------------------------------------------------- */

/* One walk from an interface down to its devices. */
struct walk {
    const char *root, *pre; /* root, and root_prefix(root) */
    struct nic *v;          /* the devices found, NIC_MAX at most */
    size_t n;
    char *seen[NIC_VISITS]; /* the interfaces looked at: a loop or a diamond is walked once */
    size_t nseen;
};

/* Whether the interface at dir is still to be looked at; it is marked as seen. */
static bool first_visit(struct walk *w, const char *dir)
{
    for (size_t k = 0; k < w->nseen; k++)
        if (strcmp(w->seen[k], dir) == 0)
            return false;
    if (w->nseen == NIC_VISITS)
        return false;
    w->seen[w->nseen++] = xstrdup(dir);
    return true;
}

/*
 * The physical interface at dir, as a struct nic. Its device/ is the
 * device its driver binds: a PCI function for most NICs, but for a virtio
 * NIC a virtio device under the PCI function, with no numa_node of its
 * own. So the node, and the directory that holds it (with the MSI
 * interrupts under msi_irqs/), are the first numa_node's on the way up;
 * the driver is the device's own (virtio_net, not virtio-pci).
 */
static void add_device(struct walk *w, const char *dir, const char *via)
{
    char *at = xasprintf("%s/device", dir), *dev = follow(w->pre, at);
    free(at);
    if (dev == NULL)
        return;
    w->v = xrealloc(w->v, (w->n + 1) * sizeof(*w->v));
    struct nic *d = &w->v[w->n++];
    *d = (struct nic){.node = -1};
    snprintf(d->name, sizeof(d->name), "%s", strrchr(dir, '/') + 1);
    snprintf(d->via, sizeof(d->via), "%s", via);

    /* the driver's name is its directory's under /sys/bus/.../drivers/ */
    at = xasprintf("%s/driver", dev);
    char *driver = follow(w->pre, at);
    free(at);
    if (driver)
        snprintf(d->driver, sizeof(d->driver), "%s", strrchr(driver, '/') + 1);
    free(driver);

    char *full = xasprintf("%s%s", w->pre, dev);
    size_t held, pre = strlen(w->pre);
    d->node = sysfs_node_up(w->root, full, &held);
    /* where no directory up has a numa_node (a kernel without NUMA), the device's own */
    snprintf(d->dev, sizeof(d->dev), "%.*s", held > pre ? (int)(held - pre) : (int)strlen(dev),
             held > pre ? full + pre : dev);
    free(full);
    free(dev);
}

static int by_version(const void *a, const void *b)
{
    return strverscmp(a, b);
}

/*
 * The names of the interfaces right under the one at dir: its lower_*
 * links (bond and team members, a VLAN's or macvlan's parent, a bridge's
 * ports), and a bridge's brif/ entries, which older kernels gave alone.
 * Each once, in version order (eth2 before eth10), as many as
 * fit in max.
 */
static size_t lowers_of(const char *pre, const char *dir, char (*names)[IFNAMSIZ], size_t max)
{
    size_t n = 0;
    for (int brif = 0; brif < 2; brif++) {
        char *path = xasprintf("%s%s%s", pre, dir, brif ? "/brif" : "");
        DIR *d = opendir(path);
        free(path);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL && n < max) {
            const char *name = e->d_name;
            if (!brif && strncmp(name, "lower_", 6) != 0)
                continue;
            name += brif ? 0 : 6;
            bool dup = name[0] == '.' || name_why(name) != NULL;
            for (size_t k = 0; k < n && !dup; k++)
                dup = strcmp(names[k], name) == 0;
            if (!dup)
                snprintf(names[n++], IFNAMSIZ, "%s", name);
        }
        if (d)
            closedir(d);
    }
    qsort(names, n, IFNAMSIZ, by_version);
    return n;
}

/*
 * The interface at dir (a path under root), and down: a physical one is a
 * device; a stacked one, each interface under it; one that is neither (lo,
 * a veth, a tun, a bridge without ports) adds nothing. via is the way
 * here ("", "bond0", "br0 > bond0"), which each device keeps.
 */
static void walk(struct walk *w, const char *dir, const char *via, int depth)
{
    if (depth > NIC_DEPTH || w->n >= NIC_MAX || !first_visit(w, dir))
        return;
    if (has(w->pre, dir, "device")) {
        add_device(w, dir, via);
        return;
    }
    const char *name = strrchr(dir, '/') + 1;
    char(*names)[IFNAMSIZ] = xcalloc(NIC_VISITS, IFNAMSIZ);
    size_t n = lowers_of(w->pre, dir, names, NIC_VISITS);
    char *below = *via ? xasprintf("%s > %s", via, name) : xstrdup(name);
    for (size_t k = 0; k < n; k++) {
        /* lower_X leads to X's directory, brif/X to X's brport/ in it */
        char *at = xasprintf("%s/lower_%s", dir, names[k]), *to = follow(w->pre, at);
        free(at);
        if (to == NULL) {
            at = xasprintf("%s/brif/%s", dir, names[k]);
            to = follow(w->pre, at);
            free(at);
            char *port = to ? strrchr(to, '/') : NULL;
            if (port && strcmp(port, "/brport") == 0 && port != to)
                *port = '\0';
        }
        if (to)
            walk(w, to, below, depth + 1);
        free(to);
    }
    free(below);
    free(names);
}

/* ---- the default route -------------------------------------------------- */

static FILE *open_under(const char *pre, const char *rel)
{
    char *path = xasprintf("%s%s", pre, rel);
    FILE *f = fopen_regular(path);
    free(path);
    return f;
}

/*
 * Whether a line of /proc/net/route is an IPv4 default route, and its
 * interface and metric. The file holds the routes of the main table, one
 * a line: interface, destination, gateway, flags, reference count, use,
 * metric, mask, and more, the addresses as hexadecimal numbers. A default
 * route goes to 0.0.0.0 with mask 0.0.0.0; it counts when it is up and no
 * reject route ("unreachable default", on no interface: "*").
 */
static bool default_v4(const char *line, char *name, unsigned long *metric)
{
    unsigned long dst, gw, mask;
    unsigned flags;
    return sscanf(line, "%15s %lx %lx %x %*d %*u %lu %lx", name, &dst, &gw, &flags, metric,
                  &mask) == 6 &&
           dst == 0 && mask == 0 && (flags & RTF_UP) && !(flags & RTF_REJECT) &&
           strcmp(name, "*") != 0;
}

/*
 * The same for a line of /proc/net/ipv6_route: destination, its prefix
 * length, source, its length, next hop, metric, reference count, use,
 * flags and device, in hexadecimal. The kernel keeps reject routes to
 * ::/0 on lo there (with metric ffffffff): those do not count.
 */
static bool default_v6(const char *line, char *name, unsigned long *metric)
{
    char dst[33];
    unsigned plen, flags;
    return sscanf(line, "%32s %x %*s %*x %*s %lx %*x %*x %x %15s", dst, &plen, metric, &flags,
                  name) == 5 &&
           strspn(dst, "0") == 32 && plen == 0 && (flags & RTF_UP) && !(flags & RTF_REJECT) &&
           strcmp(name, "lo") != 0;
}

/*
 * The interface of the default route: IPv4's, else IPv6's. Of several
 * default routes the kernel takes the lowest metric. Policy routing
 * (other tables, `ip rule`) is not looked at.
 */
static bool default_route(const char *pre, char *ifname)
{
    bool found = false;
    for (int v6 = 0; v6 < 2 && !found; v6++) {
        FILE *f = open_under(pre, v6 ? "/proc/net/ipv6_route" : "/proc/net/route");
        char *line = NULL, name[IFNAMSIZ];
        size_t cap = 0;
        unsigned long metric, best = 0;
        while (f && getline(&line, &cap, f) > 0) {
            if (!(v6 ? default_v6 : default_v4)(line, name, &metric) || (found && metric >= best))
                continue;
            snprintf(ifname, IFNAMSIZ, "%s", name);
            best = metric;
            found = true;
        }
        free(line);
        if (f)
            fclose(f);
    }
    return found;
}

/* ---- the interface an address is on ------------------------------------- */

/*
 * On this host, the C library's list of addresses (getifaddrs(3), one
 * netlink dump). An IPv4 address's name is its label, which is the
 * interface's but for the old alias form "eth0:1": the part before ':'.
 * 1 when found, 0 when not, -1 with errno when the list cannot be had.
 */
static int addr_here(const struct spec *s, char *ifname)
{
    struct ifaddrs *all;
    int found = 0;
    if (getifaddrs(&all) < 0)
        return -1;
    for (struct ifaddrs *a = all; a && !found; a = a->ifa_next) {
        if (a->ifa_addr == NULL || a->ifa_addr->sa_family != s->family || a->ifa_name == NULL)
            continue;
        const void *bytes = s->family == AF_INET
                                ? (const void *)&((struct sockaddr_in *)a->ifa_addr)->sin_addr
                                : (const void *)&((struct sockaddr_in6 *)a->ifa_addr)->sin6_addr;
        if (memcmp(bytes, s->addr, s->family == AF_INET ? 4 : 16) == 0) {
            snprintf(ifname, IFNAMSIZ, "%.*s", (int)strcspn(a->ifa_name, ":"), a->ifa_name);
            found = 1;
        }
    }
    freeifaddrs(all);
    return found;
}

/*
 * Under another root, an IPv6 address from /proc/net/if_inet6: one a
 * line, the address as 32 hexadecimal digits, then the interface's index,
 * the prefix length, scope and flags, and its name.
 */
static bool addr_v6_under(const char *pre, const struct spec *s, char *ifname)
{
    FILE *f = open_under(pre, "/proc/net/if_inet6");
    char *line = NULL, hex[33], want[33], name[IFNAMSIZ];
    size_t cap = 0;
    bool found = false;
    for (int k = 0; k < 16; k++)
        sprintf(want + 2 * k, "%02x", s->addr[k]);
    while (f && !found && getline(&line, &cap, f) > 0)
        if (sscanf(line, "%32s %*x %*x %*x %*x %15s", hex, name) == 2 &&
            strcasecmp(hex, want) == 0) {
            snprintf(ifname, IFNAMSIZ, "%s", name);
            found = true;
        }
    free(line);
    if (f)
        fclose(f);
    return found;
}

/* The mask of a prefix length, in network order as the address is. */
static uint32_t mask_of(unsigned plen)
{
    return htonl(plen == 0 ? 0 : 0xffffffffu << (32 - plen));
}

/*
 * Whether an IPv4 address (network order) is this root's own, by
 * /proc/net/fib_trie: the kernel's routing tries printed as a tree whose
 * leaves ("|-- 192.0.2.2") each list their prefixes, one a line below
 * them ("/32 host LOCAL"). An address of the host is a LOCAL route of
 * host scope: its own /32, or a whole prefix such as lo's 127.0.0.0/8.
 */
static bool local_v4(const char *pre, uint32_t addr)
{
    FILE *f = open_under(pre, "/proc/net/fib_trie");
    char *line = NULL, *leaf;
    size_t cap = 0;
    struct in_addr at;
    bool have = false, local = false;
    while (f && !local && getline(&line, &cap, f) > 0) {
        unsigned plen;
        char scope[16], type[16];
        if (strstr(line, "+-- ")) {
            have = false; /* a node of the trie, not a leaf */
        } else if ((leaf = strstr(line, "|-- ")) != NULL) {
            leaf[4 + strcspn(leaf + 4, " \n")] = '\0';
            have = inet_pton(AF_INET, leaf + 4, &at) == 1;
        } else if (have && sscanf(line, " /%u %15s %15s", &plen, scope, type) == 3 && plen <= 32) {
            local = strcmp(scope, "host") == 0 && strcmp(type, "LOCAL") == 0 &&
                    (addr & mask_of(plen)) == (at.s_addr & mask_of(plen));
        }
    }
    free(line);
    if (f)
        fclose(f);
    return local;
}

/*
 * Under another root, the interface of an IPv4 address: the fib_trie
 * proves the address local, and the interface is that of the most
 * specific route of /proc/net/route that reaches the address with no
 * gateway, the prefix route the kernel adds with each address
 * (192.0.2.0/24 on eth0 for 192.0.2.2/24). /proc/net/route prints the
 * addresses as the host's words: read back on a host of the same byte
 * order, they compare as they are. 127.0.0.0/8 is lo's, by a route of the
 * local table, which /proc/net/route does not show. An address with no
 * route of its own (added as a /32) is not found.
 */
static bool addr_v4_under(const char *pre, const struct spec *s, char *ifname)
{
    uint32_t addr;
    memcpy(&addr, s->addr, 4);
    if (!local_v4(pre, addr))
        return false;
    FILE *f = open_under(pre, "/proc/net/route");
    char *line = NULL, name[IFNAMSIZ];
    size_t cap = 0;
    int best = -1;
    while (f && getline(&line, &cap, f) > 0) {
        unsigned long dst, gw, mask;
        unsigned flags;
        if (sscanf(line, "%15s %lx %lx %x %*d %*u %*d %lx", name, &dst, &gw, &flags, &mask) != 5 ||
            gw != 0 || mask == 0 || !(flags & RTF_UP) || (flags & RTF_REJECT) ||
            (addr & mask) != dst || __builtin_popcountl(mask) <= best)
            continue;
        snprintf(ifname, IFNAMSIZ, "%s", name);
        best = __builtin_popcountl(mask);
    }
    free(line);
    if (f)
        fclose(f);
    if (best < 0 && (addr & mask_of(8)) == htonl(INADDR_LOOPBACK & 0xff000000)) {
        snprintf(ifname, IFNAMSIZ, "lo");
        best = 8;
    }
    return best >= 0;
}

/* ---- what the plan says ------------------------------------------------- */

/*
 * The clause: the devices by name, with their nodes once when they share
 * one ("eth0 and eth1 (node 1)") and each its own when not ("eth0 (node
 * 0) and eth1 (node 1)"), and the stacked interface they were reached
 * through when the spec did not name it ("default-route is eth0 via br0").
 */
static char *said(const char *spec, const char *verb, const char *top, const struct nic *v,
                  size_t n)
{
    bool shared = true, none = true;
    for (size_t k = 0; k < n; k++) {
        shared &= v[k].node == v[0].node;
        none &= v[k].node < 0;
    }
    size_t shown = n < NIC_SHOWN ? n : NIC_SHOWN;
    char *list = xstrdup("");
    for (size_t k = 0; k < shown; k++) {
        char node[32] = "";
        if (!shared)
            snprintf(node, sizeof(node), v[k].node < 0 ? " (no node)" : " (node %d)", v[k].node);
        const char *sep = k == 0 ? "" : k + 1 == shown && n == shown ? " and " : ", ";
        char *more = xasprintf("%s%s%s%s", list, sep, v[k].name, node);
        free(list);
        list = more;
    }
    char rest[64] = "", via[IFNAMSIZ + 8] = "", node[64];
    if (n > shown)
        snprintf(rest, sizeof(rest), " and %s%zu more", n >= NIC_MAX ? "at least " : "", n - shown);
    if (*top && v[0].via[0])
        snprintf(via, sizeof(via), " via %s", top);
    if (!shared)
        node[0] = '\0';
    else if (none)
        snprintf(node, sizeof(node), " (the firmware gives %s no NUMA node)",
                 n > 1 ? "them" : "it");
    else
        snprintf(node, sizeof(node), " (node %d)", v[0].node);
    char *what = xasprintf("%s %s %s%s%s%s", spec, verb, list, rest, via, node);
    free(list);
    return what;
}

/* ---- near --------------------------------------------------------------- */

/*
 * The interface spec names, into ifname, with the verb and the name its
 * clause says it by (top: "" when spec is netdev:, which names it
 * itself). NULL, or the clause that says why there is none.
 */
static char *interface_of(const char *root, const char *spec, const struct spec *s, char *ifname,
                          const char **verb, const char **top)
{
    const char *pre = root_prefix(root);
    *verb = "is";
    *top = ifname;
    if (s->kind == SPEC_NETDEV) {
        snprintf(ifname, IFNAMSIZ, "%s", s->ifname);
        *top = "";
        return NULL;
    }
    if (s->kind == SPEC_ROUTE)
        return default_route(pre, ifname) ? NULL
                                          : xasprintf("%s: there is no default route here", spec);
    *verb = "is on";
    int found = *pre == '\0'           ? addr_here(s, ifname)
                : s->family == AF_INET ? addr_v4_under(pre, s, ifname)
                                       : addr_v6_under(pre, s, ifname);
    if (found < 0)
        return xasprintf("%s: the addresses of this host cannot be listed: %s", spec,
                         strerror(errno));
    return found ? NULL : xasprintf("%s is on no interface here", spec);
}

enum near_status nic_nodes(const char *root, const char *spec, hwloc_bitmap_t nodes, char **what,
                           struct nic **nics, size_t *np)
{
    hwloc_bitmap_zero(nodes);
    *nics = NULL;
    *np = 0;
    struct spec s;
    const char *why = spec_why(spec, &s), *verb, *top;
    if (why || s.any) {
        *what = why ? xasprintf("%s: %s", spec, why) : xasprintf("%s " ANY_WHY, spec);
        return NEAR_NO_PATH;
    }
    char ifname[IFNAMSIZ];
    if ((*what = interface_of(root, spec, &s, ifname, &verb, &top)) != NULL)
        return NEAR_NO_PATH;

    char *at = xasprintf("/sys/class/net/%s", ifname);
    char *dir = follow(root_prefix(root), at);
    free(at);
    if (dir == NULL) {
        *what = *top ? xasprintf("%s %s %s: no such interface", spec, verb, ifname)
                     : xasprintf("%s: no such interface", spec);
        return NEAR_NO_PATH;
    }
    struct walk w = {.root = root, .pre = root_prefix(root)};
    walk(&w, dir, "", 0);
    free(dir);
    for (size_t k = 0; k < w.nseen; k++)
        free(w.seen[k]);

    if (w.n == 0) {
        *what =
            *top ? xasprintf("%s %s %s, which is virtual (no device under it)", spec, verb, ifname)
                 : xasprintf("%s is virtual (no device under it)", spec);
        return NEAR_NO_DEVICE;
    }
    for (size_t k = 0; k < w.n; k++)
        if (w.v[k].node >= 0)
            hwloc_bitmap_set(nodes, (unsigned)w.v[k].node);
    *what = said(spec, verb, top, w.v, w.n);
    *nics = w.v;
    *np = w.n;
    return hwloc_bitmap_iszero(nodes) ? NEAR_NO_NODE : NEAR_FOUND;
}

void nic_free(struct nic *v, size_t n)
{
    (void)n;
    free(v);
}
