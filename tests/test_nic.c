/*
 * test_nic.c - the physical NICs under an interface, and the nodes they
 * hang off, read from a /sys and /proc/net tree made here in the kernel's
 * shape: PCI NICs on two nodes, a virtio NIC whose PCI function holds the
 * node, bonds, a VLAN on a bond, a bridge over a bond, a macvlan three
 * layers up, NICs the firmware gives no node, virtual interfaces, a loop
 * of lower_ links; the default route and this host's addresses from
 * /proc/net. Then netdev:lo and ip:127.0.0.1 on this very host.
 */
#include "nic.h"
#include "fixture.h"
#include "util.h"

#include <arpa/inet.h>
#include <net/route.h>

#define UP_GW (RTF_UP | RTF_GATEWAY) /* a route through a gateway */

/* An interface's directory under /sys/devices, and /sys/class/net/NAME to it. */
static void netdev(const char *dir)
{
    char rel[4096], target[4096];
    snprintf(rel, sizeof(rel), "/sys/devices/%s/ifindex", dir);
    put(rel, "2");
    snprintf(rel, sizeof(rel), "/sys/class/net/%s", strrchr(dir, '/') + 1);
    snprintf(target, sizeof(target), "../../devices/%s", dir);
    link_to(rel, target);
}

/*
 * A PCI NIC: the function fn ("pci0000:00/0000:00:03.0") with its node
 * (NULL: no numa_node file at all), MSI interrupts and driver, and the
 * interface name under its net/, whose device links back to it.
 */
static void pci_nic(const char *fn, const char *name, const char *node, const char *driver)
{
    char rel[4096], target[4096];
    if (node) {
        snprintf(rel, sizeof(rel), "/sys/devices/%s/numa_node", fn);
        put(rel, node);
    }
    snprintf(rel, sizeof(rel), "/sys/devices/%s/msi_irqs/40", fn);
    put(rel, "msi");
    snprintf(rel, sizeof(rel), "/sys/devices/%s/driver", fn);
    snprintf(target, sizeof(target), "../../../bus/pci/drivers/%s", driver);
    link_to(rel, target);
    snprintf(rel, sizeof(rel), "%s/net/%s", fn, name);
    netdev(rel);
    snprintf(rel, sizeof(rel), "/sys/devices/%s/net/%s/device", fn, name);
    snprintf(target, sizeof(target), "../../../%s", strrchr(fn, '/') + 1);
    link_to(rel, target);
}

/* upper's lower_NAME, to the lower interface's directory; both under /sys/devices. */
static void lower(const char *upper, const char *dir)
{
    char rel[4096], target[4096] = "";
    snprintf(rel, sizeof(rel), "/sys/devices/%s/lower_%s", upper, strrchr(dir, '/') + 1);
    for (const char *c = upper; c; c = strchr(c + 1, '/'))
        strcat(target, "../");
    strcat(target, dir);
    link_to(rel, target);
}

/* A bridge's port: brif/NAME, to the port's brport/ (and, as current kernels, lower_NAME). */
static void port(const char *bridge, const char *dir, bool also_lower)
{
    char rel[4096], target[4096] = "";
    snprintf(rel, sizeof(rel), "/sys/devices/%s/brport/state", dir);
    put(rel, "3");
    snprintf(rel, sizeof(rel), "/sys/devices/%s/brif/%s", bridge, strrchr(dir, '/') + 1);
    for (const char *c = bridge; c; c = strchr(c + 1, '/'))
        strcat(target, "../");
    strcat(target, "../");
    strcat(target, dir);
    strcat(target, "/brport");
    link_to(rel, target);
    if (also_lower)
        lower(bridge, dir);
}

#define ETH0   "pci0000:00/0000:00:03.0/net/eth0"
#define ETH1   "pci0000:80/0000:80:03.0/net/eth1"
#define ETH3   "pci0000:00/0000:00:06.0/net/eth3"
#define ETH4   "pci0000:00/0000:00:04.0/net/eth4"
#define ETH5   "pci0000:00/0000:00:04.1/net/eth5"
#define ETH6   "pci0000:00/0000:00:07.0/net/eth6"
#define ETH7   "pci0000:80/0000:80:04.0/net/eth7"
#define ETH10  "pci0000:00/0000:00:08.0/net/eth10"
#define ENP8S0 "pci0000:c0/0000:c0:01.0/net/enp8s0"
#define VIRTIO "pci0000:00/0000:00:05.0"
#define ENS5   VIRTIO "/virtio2/net/ens5"
#define VNET   "virtual/net/"

static int setup(void **state)
{
    (void)state;
    make_root("nic");
    pci_nic("pci0000:00/0000:00:03.0", "eth0", "1", "ixgbe");
    pci_nic("pci0000:80/0000:80:03.0", "eth1", "0", "ixgbe");
    pci_nic("pci0000:00/0000:00:04.0", "eth4", "1", "i40e");
    pci_nic("pci0000:00/0000:00:04.1", "eth5", "1", "i40e");
    pci_nic("pci0000:00/0000:00:06.0", "eth3", "-1", "e1000e"); /* a one-node firmware's */
    pci_nic("pci0000:00/0000:00:07.0", "eth6", NULL, "e1000e"); /* a kernel without NUMA */
    pci_nic("pci0000:80/0000:80:04.0", "eth7", "0", "mlx5_core");
    pci_nic("pci0000:00/0000:00:08.0", "eth10", "-1", "igb");
    pci_nic("pci0000:c0/0000:c0:01.0", "enp8s0", "2", "bnxt_en");
    /* virtio: the PCI function holds the node; the virtio device under it, the driver */
    put("/sys/devices/" VIRTIO "/numa_node", "1");
    put("/sys/devices/" VIRTIO "/msi_irqs/37", "msi");
    link_to("/sys/devices/" VIRTIO "/driver", "../../../bus/pci/drivers/virtio-pci");
    link_to("/sys/devices/" VIRTIO "/virtio2/driver", "../../../../bus/virtio/drivers/virtio_net");
    netdev(ENS5);
    link_to("/sys/devices/" ENS5 "/device", "../../../virtio2");
    /* virtual interfaces */
    netdev(VNET "lo");
    netdev(VNET "veth0");
    /* bond0 over NICs on nodes 1 and 0, a VLAN on it, and a macvlan on the VLAN */
    netdev(VNET "bond0");
    lower(VNET "bond0", ETH0);
    lower(VNET "bond0", ETH1);
    netdev(VNET "bond0.100");
    lower(VNET "bond0.100", VNET "bond0");
    netdev(VNET "mv0");
    lower(VNET "mv0", VNET "bond0.100");
    /* br0 over bond1, over two NICs on node 1 */
    netdev(VNET "bond1");
    lower(VNET "bond1", ETH4);
    lower(VNET "bond1", ETH5);
    netdev(VNET "br0");
    port(VNET "br0", VNET "bond1", true);
    /* br1 over a NIC on node 2 and a veth; br2 with no port; br3 as old kernels show ports */
    netdev(VNET "br1");
    port(VNET "br1", ENP8S0, true);
    port(VNET "br1", VNET "veth0", true);
    netdev(VNET "br2");
    netdev(VNET "br3");
    port(VNET "br3", ENS5, false);
    /* NICs with no node, and one with and one without, eth10 after eth7 */
    netdev(VNET "bond2");
    lower(VNET "bond2", ETH3);
    lower(VNET "bond2", ETH6);
    netdev(VNET "bond3");
    lower(VNET "bond3", ETH10);
    lower(VNET "bond3", ETH7);
    /* a loop: no kernel makes one, and no walk hangs */
    netdev(VNET "team0");
    netdev(VNET "team1");
    lower(VNET "team0", VNET "team1");
    lower(VNET "team1", VNET "team0");
    /* bond9 over 40 NICs on node 0: more than a walk tells apart */
    netdev(VNET "bond9");
    for (int i = 0; i < 40; i++) {
        char fn[64], name[16], dir[128];
        snprintf(fn, sizeof(fn), "pci0000:80/0000:81:%02x.0", i);
        snprintf(name, sizeof(name), "p%d", i);
        pci_nic(fn, name, "0", "ice");
        snprintf(dir, sizeof(dir), "%s/net/%s", fn, name);
        lower(VNET "bond9", dir);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return remove_root();
}

/* A line of /proc/net/route, the addresses as the kernel prints them: the host's words. */
static char *route_line(const char *ifname, const char *dst, const char *gw, unsigned flags,
                        int metric, const char *mask)
{
    struct in_addr d, g, m;
    inet_pton(AF_INET, dst, &d);
    inet_pton(AF_INET, gw, &g);
    inet_pton(AF_INET, mask, &m);
    return xasprintf("%s\t%08X\t%08X\t%04X\t0\t0\t%d\t%08X\t0\t0\t0\n", ifname, d.s_addr, g.s_addr,
                     flags, metric, m.s_addr);
}

/* /proc/net/route with a header and up to four routes (NULL: none), and ipv6_route. */
static void routes(char *const v4[4], const char *v6)
{
    char *text = xstrdup("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU"
                         "\tWindow\tIRTT");
    for (int i = 0; i < 4 && v4[i]; i++) {
        char *more = xasprintf("%s\n%.*s", text, (int)strlen(v4[i]) - 1, v4[i]);
        free(text);
        free(v4[i]);
        text = more;
    }
    put("/proc/net/route", text);
    free(text);
    put("/proc/net/ipv6_route", v6);
}

/* The reject routes every IPv6 kernel keeps on lo, and a link-local route. */
#define V6_LO                                                                                      \
    "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "                     \
    "00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n"              \
    "fe800000000000000000000000000000 40 00000000000000000000000000000000 00 "                     \
    "00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0"

/* The addresses of the fixture: fib_trie (IPv4) and if_inet6. */
static void addresses(void)
{
    put("/proc/net/fib_trie", "Main:\n"
                              "  +-- 0.0.0.0/0 3 0 5\n"
                              "     |-- 0.0.0.0\n"
                              "        /0 universe UNICAST\n"
                              "     +-- 10.0.0.0/16 2 0 2\n"
                              "        |-- 10.0.0.0\n"
                              "           /16 link UNICAST\n"
                              "        |-- 10.0.5.7\n"
                              "           /32 host LOCAL\n"
                              "        |-- 10.9.9.9\n"
                              "           /32 host LOCAL\n"
                              "     +-- 127.0.0.0/8 2 0 2\n"
                              "        |-- 127.0.0.0\n"
                              "           /8 host LOCAL\n"
                              "        |-- 127.255.255.255\n"
                              "           /32 link BROADCAST\n"
                              "     +-- 192.168.1.0/24 2 0 2\n"
                              "        |-- 192.168.1.0\n"
                              "           /24 link UNICAST\n"
                              "        |-- 192.168.1.10\n"
                              "           /32 host LOCAL\n"
                              "        |-- 192.168.1.255\n"
                              "           /32 link BROADCAST");
    put("/proc/net/if_inet6", "20010db8000000000000000000000010 05 40 00 80 bond0.100\n"
                              "00000000000000000000000000000001 01 80 10 80       lo\n"
                              "fe800000000000000000000000000001 02 40 20 80     eth0");
    routes((char *[4]){route_line("eth1", "0.0.0.0", "10.0.0.1", UP_GW, 100, "0.0.0.0"),
                       route_line("eth1", "10.0.0.0", "0.0.0.0", 1, 0, "255.255.0.0"),
                       route_line("br0", "192.168.1.0", "0.0.0.0", 1, 0, "255.255.255.0"),
                       /* a network reached through a gateway is not where its addresses are */
                       route_line("eth7", "10.9.0.0", "10.0.0.254", UP_GW, 0, "255.255.0.0")},
           V6_LO);
}

/* "eth0:1, eth4:1 (br0 > bond1)": each device with its node and the way to it. */
static char *nics_said(const struct nic *v, size_t n)
{
    char *out = xstrdup("");
    for (size_t k = 0; k < n; k++) {
        char *more = xasprintf("%s%s%s:%d%s%s%s", out, k ? ", " : "", v[k].name, v[k].node,
                               *v[k].via ? " (" : "", v[k].via, *v[k].via ? ")" : "");
        free(out);
        out = more;
    }
    return out;
}

struct said_case {
    const char *spec, *nodes;
    enum near_status status;
    const char *nics, *what; /* nics: as nics_said() */
};

static void check_said(const char *under, const struct said_case *cases, size_t count)
{
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    for (size_t i = 0; i < count; i++) {
        char *what;
        struct nic *v;
        size_t n;
        enum near_status st = nic_nodes(under, cases[i].spec, nodes, &what, &v, &n);
        char *got = bitmap_list(nodes), *nics = nics_said(v, n);
        if (strcmp(what, cases[i].what) != 0 ||
            strcmp(got, *cases[i].nodes ? cases[i].nodes : "none") != 0 || st != cases[i].status ||
            strcmp(nics, cases[i].nics) != 0)
            fail_msg("%s: nodes %s, %s, nics '%s', '%s'; want %s, %s, '%s', '%s'", cases[i].spec,
                     got, near_status_name(st), nics, what, cases[i].nodes,
                     near_status_name(cases[i].status), cases[i].nics, cases[i].what);
        if ((n == 0) != (v == NULL))
            fail_msg("%s: %zu devices at %p", cases[i].spec, n, (void *)v);
        free(got);
        free(nics);
        free(what);
        nic_free(v, n);
    }
    hwloc_bitmap_free(nodes);
}
#define CHECK_SAID(under, cases) check_said(under, cases, sizeof(cases) / sizeof(cases[0]))

/* netdev: through each kind of stack, to each kind of answer. */
static void test_netdev(void **state)
{
    (void)state;
    static const struct said_case cases[] = {
        {"netdev:eth0", "1", NEAR_FOUND, "eth0:1", "netdev:eth0 is eth0 (node 1)"},
        {"netdev:ens5", "1", NEAR_FOUND, "ens5:1", "netdev:ens5 is ens5 (node 1)"},
        {"netdev:bond0", "0-1", NEAR_FOUND, "eth0:1 (bond0), eth1:0 (bond0)",
         "netdev:bond0 is eth0 (node 1) and eth1 (node 0)"},
        {"netdev:bond1", "1", NEAR_FOUND, "eth4:1 (bond1), eth5:1 (bond1)",
         "netdev:bond1 is eth4 and eth5 (node 1)"},
        {"netdev:bond0.100", "0-1", NEAR_FOUND,
         "eth0:1 (bond0.100 > bond0), eth1:0 (bond0.100 > bond0)",
         "netdev:bond0.100 is eth0 (node 1) and eth1 (node 0)"},
        {"netdev:mv0", "0-1", NEAR_FOUND,
         "eth0:1 (mv0 > bond0.100 > bond0), eth1:0 (mv0 > bond0.100 > bond0)",
         "netdev:mv0 is eth0 (node 1) and eth1 (node 0)"},
        {"netdev:br0", "1", NEAR_FOUND, "eth4:1 (br0 > bond1), eth5:1 (br0 > bond1)",
         "netdev:br0 is eth4 and eth5 (node 1)"},
        {"netdev:br1", "2", NEAR_FOUND, "enp8s0:2 (br1)", "netdev:br1 is enp8s0 (node 2)"},
        {"netdev:br3", "1", NEAR_FOUND, "ens5:1 (br3)", "netdev:br3 is ens5 (node 1)"},
        {"netdev:eth3", "", NEAR_NO_NODE, "eth3:-1",
         "netdev:eth3 is eth3 (the firmware gives it no NUMA node)"},
        {"netdev:bond2", "", NEAR_NO_NODE, "eth3:-1 (bond2), eth6:-1 (bond2)",
         "netdev:bond2 is eth3 and eth6 (the firmware gives them no NUMA node)"},
        {"netdev:bond3", "0", NEAR_FOUND, "eth7:0 (bond3), eth10:-1 (bond3)",
         "netdev:bond3 is eth7 (node 0) and eth10 (no node)"},
        {"netdev:lo", "", NEAR_NO_DEVICE, "", "netdev:lo is virtual (no device under it)"},
        {"netdev:veth0", "", NEAR_NO_DEVICE, "", "netdev:veth0 is virtual (no device under it)"},
        {"netdev:br2", "", NEAR_NO_DEVICE, "", "netdev:br2 is virtual (no device under it)"},
        {"netdev:team0", "", NEAR_NO_DEVICE, "", "netdev:team0 is virtual (no device under it)"},
        {"netdev:eth9", "", NEAR_NO_PATH, "", "netdev:eth9: no such interface"},
        {"netdev:eth0:1", "", NEAR_NO_PATH, "",
         "netdev:eth0:1: an interface name has no ':' (eth0:1 is a label on an address of eth0: "
         "name eth0)"},
    };
    CHECK_SAID(root, cases);
}

/* What a plan and the interrupt placement read of each device. */
static void test_devices(void **state)
{
    (void)state;
    static const struct {
        const char *spec;
        struct nic want;
    } cases[] = {
        {"netdev:eth0", {"eth0", "", "/sys/devices/pci0000:00/0000:00:03.0", "ixgbe", 1}},
        {"netdev:br3", {"ens5", "br3", "/sys/devices/" VIRTIO, "virtio_net", 1}},
        {"netdev:eth3", {"eth3", "", "/sys/devices/pci0000:00/0000:00:06.0", "e1000e", -1}},
        /* no numa_node anywhere up: the device's own directory */
        {"netdev:eth6", {"eth6", "", "/sys/devices/pci0000:00/0000:00:07.0", "e1000e", -1}},
    };
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *what;
        struct nic *v;
        size_t n;
        nic_nodes(root, cases[i].spec, nodes, &what, &v, &n);
        assert_int_equal(n, 1);
        assert_string_equal(v[0].name, cases[i].want.name);
        assert_string_equal(v[0].via, cases[i].want.via);
        assert_string_equal(v[0].dev, cases[i].want.dev);
        assert_string_equal(v[0].driver, cases[i].want.driver);
        assert_int_equal(v[0].node, cases[i].want.node);
        free(what);
        nic_free(v, n);
    }
    hwloc_bitmap_free(nodes);
}

/* The 40 NICs under bond9: the walk tells 32 apart, and the clause names 8. */
static void test_many(void **state)
{
    (void)state;
    static const struct said_case cases[] = {
        {"netdev:bond9", "0", NEAR_FOUND,
         "p0:0 (bond9), p1:0 (bond9), p2:0 (bond9), p3:0 (bond9), p4:0 (bond9), p5:0 (bond9), "
         "p6:0 (bond9), p7:0 (bond9), p8:0 (bond9), p9:0 (bond9), p10:0 (bond9), p11:0 (bond9), "
         "p12:0 (bond9), p13:0 (bond9), p14:0 (bond9), p15:0 (bond9), p16:0 (bond9), "
         "p17:0 (bond9), p18:0 (bond9), p19:0 (bond9), p20:0 (bond9), p21:0 (bond9), "
         "p22:0 (bond9), p23:0 (bond9), p24:0 (bond9), p25:0 (bond9), p26:0 (bond9), "
         "p27:0 (bond9), p28:0 (bond9), p29:0 (bond9), p30:0 (bond9), p31:0 (bond9)",
         "netdev:bond9 is p0, p1, p2, p3, p4, p5, p6, p7 and at least 24 more (node 0)"},
    };
    CHECK_SAID(root, cases);
}

/* The default route: IPv4's lowest metric, else IPv6's; a reject route is none. */
static void test_default_route(void **state)
{
    (void)state;
    /* two defaults, and an "unreachable default" with a lower metric still */
    routes((char *[4]){route_line("eth1", "0.0.0.0", "10.0.0.1", UP_GW, 600, "0.0.0.0"),
                       route_line("*", "0.0.0.0", "0.0.0.0", 0x0201, 0, "0.0.0.0"),
                       route_line("br0", "0.0.0.0", "192.168.1.1", UP_GW, 100, "0.0.0.0"),
                       route_line("br0", "192.168.1.0", "0.0.0.0", 1, 0, "255.255.255.0")},
           V6_LO);
    static const struct said_case v4[] = {
        {"default-route", "1", NEAR_FOUND, "eth4:1 (br0 > bond1), eth5:1 (br0 > bond1)",
         "default-route is eth4 and eth5 via br0 (node 1)"},
    };
    CHECK_SAID(root, v4);

    /* IPv6 only: the default route is ens5's, not lo's reject route */
    routes((char *[4]){route_line("eth1", "10.0.0.0", "0.0.0.0", 1, 0, "255.255.0.0"), NULL},
           V6_LO "\n00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
                 "fe800000000000000000000000000001 00000400 00000001 00000000 00000003     ens5");
    static const struct said_case v6[] = {
        {"default-route", "1", NEAR_FOUND, "ens5:1", "default-route is ens5 (node 1)"},
    };
    CHECK_SAID(root, v6);

    /* none; one on a veth, as in a container; one on an interface sysfs does not have */
    routes((char *[4]){NULL}, V6_LO);
    static const struct said_case none[] = {
        {"default-route", "", NEAR_NO_PATH, "", "default-route: there is no default route here"},
    };
    CHECK_SAID(root, none);
    routes((char *[4]){route_line("veth0", "0.0.0.0", "10.0.0.1", UP_GW, 0, "0.0.0.0")}, "");
    static const struct said_case veth[] = {
        {"default-route", "", NEAR_NO_DEVICE, "",
         "default-route is veth0, which is virtual (no device under it)"},
    };
    CHECK_SAID(root, veth);
    routes((char *[4]){route_line("eth11", "0.0.0.0", "10.0.0.1", UP_GW, 0, "0.0.0.0")}, "");
    static const struct said_case gone[] = {
        {"default-route", "", NEAR_NO_PATH, "", "default-route is eth11: no such interface"},
    };
    CHECK_SAID(root, gone);
}

/* ip: under a root: fib_trie and route for IPv4, if_inet6 for IPv6. */
static void test_ip(void **state)
{
    (void)state;
    addresses();
    static const struct said_case cases[] = {
        {"ip:192.168.1.10", "1", NEAR_FOUND, "eth4:1 (br0 > bond1), eth5:1 (br0 > bond1)",
         "ip:192.168.1.10 is on eth4 and eth5 via br0 (node 1)"},
        {"ip:10.0.5.7", "0", NEAR_FOUND, "eth1:0", "ip:10.0.5.7 is on eth1 (node 0)"},
        {"ip:[2001:db8::10]", "0-1", NEAR_FOUND,
         "eth0:1 (bond0.100 > bond0), eth1:0 (bond0.100 > bond0)",
         "ip:[2001:db8::10] is on eth0 (node 1) and eth1 (node 0) via bond0.100"},
        {"ip:2001:db8::10", "0-1", NEAR_FOUND,
         "eth0:1 (bond0.100 > bond0), eth1:0 (bond0.100 > bond0)",
         "ip:2001:db8::10 is on eth0 (node 1) and eth1 (node 0) via bond0.100"},
        {"ip:127.0.0.1", "", NEAR_NO_DEVICE, "",
         "ip:127.0.0.1 is on lo, which is virtual (no device under it)"},
        {"ip:::1", "", NEAR_NO_DEVICE, "",
         "ip:::1 is on lo, which is virtual (no device under it)"},
        /* a network the host is on, but not its address; a local /32 with no route of its own */
        {"ip:10.0.0.99", "", NEAR_NO_PATH, "", "ip:10.0.0.99 is on no interface here"},
        {"ip:10.9.9.9", "", NEAR_NO_PATH, "", "ip:10.9.9.9 is on no interface here"},
        {"ip:172.16.0.1", "", NEAR_NO_PATH, "", "ip:172.16.0.1 is on no interface here"},
        {"ip:2001:db8::99", "", NEAR_NO_PATH, "", "ip:2001:db8::99 is on no interface here"},
        {"ip:0.0.0.0", "", NEAR_NO_PATH, "",
         "ip:0.0.0.0 listens on every interface; name one with netdev:IF or use default-route"},
        {"ip:[::]", "", NEAR_NO_PATH, "",
         "ip:[::] listens on every interface; name one with netdev:IF or use default-route"},
        {"ip:fe80::1%eth0", "", NEAR_NO_PATH, "",
         "ip:fe80::1%eth0: an address with a zone (%eth0) is not taken: name the interface with "
         "netdev:"},
    };
    CHECK_SAID(root, cases);
}

/* A root given with a '/' at its end, or as a relative path, is the same tree. */
static void test_root_spelled_otherwise(void **state)
{
    (void)state;
    static const struct said_case cases[] = {
        {"netdev:br3", "1", NEAR_FOUND, "ens5:1 (br3)", "netdev:br3 is ens5 (node 1)"},
    };
    char slashed[sizeof(root) + 1], cwd[4096];
    snprintf(slashed, sizeof(slashed), "%s/", root);
    CHECK_SAID(slashed, cases);
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir("/tmp"), 0);
    CHECK_SAID(root + strlen("/tmp/"), cases);
    assert_int_equal(chdir(cwd), 0);
}

static void test_spec(void **state)
{
    (void)state;
    static const char *const nic[] = {"netdev:eth0", "ip:10.0.0.5", "default-route",
                                      "netdev:", "ip:"};
    static const char *const paths[] = {"/srv", "default",    "netdev", "default-route/x",
                                        "ip",   "Netdev:eth0"};
    for (size_t i = 0; i < sizeof(nic) / sizeof(nic[0]); i++)
        if (!nic_spec(nic[i]))
            fail_msg("%s names a NIC", nic[i]);
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
        if (nic_spec(paths[i]))
            fail_msg("%s names no NIC", paths[i]);
}

static void test_spec_valid(void **state)
{
    (void)state;
    static const char *const good[] = {
        "netdev:eth0",        "netdev:enp3s0f1", "netdev:bond0.100", "netdev:abcdefghijklmno",
        "netdev:br-lan",      "ip:10.0.0.5",     "ip:2001:db8::5",   "ip:[2001:db8::5]",
        "ip:::ffff:10.0.0.5", "default-route",
    };
    static const struct {
        const char *near, *why; /* why: a part of the reason */
    } bad[] = {
        {"netdev:", "names no interface"},
        {"netdev:abcdefghijklmnop", "at most 15"},
        {"netdev:.", "not interface names"},
        {"netdev:..", "not interface names"},
        {"netdev:a/b", "no '/'"},
        {"netdev:eth 0", "white space"},
        {"netdev:eth0\t", "white space"},
        {"netdev:eth0:1", "label"},
        {"ip:", "names no address"},
        {"ip:10.0.0", "not an IPv4 or IPv6 address"},
        {"ip:300.1.1.1", "not an IPv4 or IPv6 address"},
        {"ip:eth0", "not an IPv4 or IPv6 address"},
        {"ip:[10.0.0.5]", "not an IPv6 address in its brackets"},
        {"ip:[2001:db8::5", "closing ']'"},
        {"ip:[", "closing ']'"},
        {"ip:fe80::1%eth0", "zone"},
        {"ip:[fe80::1%eth0]", "zone"},
        {"ip:0.0.0.0", "0.0.0.0 listens on every interface; name one with netdev:IF"},
        {"ip:::", ":: listens on every interface"},
        {"ip:[::]", ":: listens on every interface"},
        {"/srv", "not netdev:IF, ip:ADDR or default-route"},
    };
    const char *why;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (!nic_spec_valid(good[i], &why))
            fail_msg("%s: %s", good[i], why);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why = NULL;
        if (nic_spec_valid(bad[i].near, &why) || why == NULL || strstr(why, bad[i].why) == NULL)
            fail_msg("%s: '%s', not '%s'", bad[i].near, why ? why : "(valid)", bad[i].why);
    }
}

/* This very host: lo is in every network namespace, and virtual. */
static void test_this_host(void **state)
{
    (void)state;
    static const struct said_case cases[] = {
        {"netdev:lo", "", NEAR_NO_DEVICE, "", "netdev:lo is virtual (no device under it)"},
        {"ip:127.0.0.1", "", NEAR_NO_DEVICE, "",
         "ip:127.0.0.1 is on lo, which is virtual (no device under it)"},
        {"ip:192.0.2.123", "", NEAR_NO_PATH, "", "ip:192.0.2.123 is on no interface here"},
        {"netdev:tunerun-no0", "", NEAR_NO_PATH, "", "netdev:tunerun-no0: no such interface"},
    };
    CHECK_SAID("/", cases);
    /* whatever this host's default route is, the walk ends and says so */
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    char *what;
    struct nic *v;
    size_t n;
    nic_nodes("/", "default-route", nodes, &what, &v, &n);
    if (strncmp(what, "default-route ", 14) != 0 && strncmp(what, "default-route: ", 15) != 0)
        fail_msg("'%s'", what);
    free(what);
    nic_free(v, n);
    hwloc_bitmap_free(nodes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_netdev),    cmocka_unit_test(test_devices),
        cmocka_unit_test(test_many),      cmocka_unit_test(test_default_route),
        cmocka_unit_test(test_ip),        cmocka_unit_test(test_root_spelled_otherwise),
        cmocka_unit_test(test_spec),      cmocka_unit_test(test_spec_valid),
        cmocka_unit_test(test_this_host),
    };
    return cmocka_run_group_tests_name("nic", tests, setup, teardown);
}
