/*
 * nic.h - the network interface a profile's `near` names, the physical
 * devices under it, and the NUMA node each hangs off.
 *
 * A service that lives on packets (nginx, HAProxy, redis) fears the
 * remote node as mysql fears a remote disk: the NIC's DMA and interrupts
 * land on the node its PCI slot hangs off, and every packet handled on the
 * other node crosses the interconnect twice. `near` names the NIC in one of
 * three ways:
 *
 *   netdev:IF       an interface by name (netdev:eth0, netdev:bond0)
 *   ip:ADDR         the interface an address the service listens on is on
 *   default-route   the interface of the default route (IPv4, else IPv6)
 *
 * and each resolves through bonds, VLANs, bridges and macvlans to the
 * physical devices below (the kernel's lower_* links), as disk.c resolves
 * LVM and md to the disks. A virtio NIC's device/ is the virtio device;
 * its PCI parent holds numa_node.
 *
 * Every file is read under `root` ("/" on this host), so doctor's fixture
 * trees shaped like another host's /proc and /sys work the same; ip: is
 * resolved through getifaddrs(3) on this host, and through root's
 * /proc/net/fib_trie and /proc/net/route (IPv4) and /proc/net/if_inet6
 * (IPv6) under another root.
 */
#ifndef TUNERUN_NIC_H
#define TUNERUN_NIC_H

#include <hwloc/bitmap.h>
#include <stdbool.h>
#include <stddef.h>

#include "disk.h"

/* The spellings of `near` that name a NIC rather than a path. */
#define NIC_NETDEV_PREFIX "netdev:"
#define NIC_IP_PREFIX     "ip:"
#define NIC_DEFAULT_ROUTE "default-route"

/* Whether a `near` value names a NIC (any of the three spellings), not a path. */
bool nic_spec(const char *near);

/*
 * Whether a `near` value that names a NIC is well formed: an interface
 * name the kernel would accept (1 to 15 characters, no '/', ':' or
 * space, nor "." or ".."), an IPv4 or IPv6 address (an IPv6 one with or
 * without brackets, and no zone), or default-route. 0.0.0.0 and :: are
 * refused: they are every interface's. False with *why set (static text,
 * which does not repeat the value) otherwise: what profile_keys.c reports
 * with the file and line.
 */
bool nic_spec_valid(const char *near, const char **why);

/* One physical network device under the interface `near` names. */
struct nic {
    char name[16];   /* the physical interface (eth0, enp3s0f1) */
    char via[64];    /* how it was reached: "" for the interface itself, "bond0", "br0 > bond0" */
    char dev[256];   /* its device's sysfs directory under root, the one with numa_node and
                        msi_irqs ("/sys/devices/pci0000:00/0000:00:03.0"): the first directory
                        from device/ up that has a numa_node (a virtio NIC's PCI function), else
                        device/'s own (a kernel without NUMA) */
    char driver[32]; /* the driver's name (virtio_net, mlx5_core, ixgbe), "" when unknown */
    int node;        /* numa_node; -1 when the firmware gives none */
};

/*
 * `near` for a NIC: the physical devices under the interface spec names,
 * into *nics and *n (NULL and 0 when there are none; free them with
 * nic_free()); the nodes they hang off into nodes (left empty when none is
 * known); and one clause for the plan that says what was found, or why
 * nothing was ("default-route is eth0 (node 1)", "netdev:bond0 is eth0 and
 * eth1 (node 1)", "ip:10.0.0.5 is on no interface here"). The status is:
 *   NEAR_FOUND      devices, and their nodes
 *   NEAR_NO_NODE    devices, but the firmware gives none of them a node (-1)
 *   NEAR_NO_DEVICE  only virtual interfaces (lo, a bridge without ports, a
 *                   veth, a tun): nothing for packets to be near
 *   NEAR_NO_PATH    the interface, address or route does not exist, or spec
 *                   is not well formed (ip:0.0.0.0 too); the reason in what
 * The devices come in the order of the walk: each stacked interface's lower
 * ones in version order (eth2 before eth10), the first NIC_MAX of them.
 * The caller frees what.
 */
enum near_status nic_nodes(const char *root, const char *spec, hwloc_bitmap_t nodes, char **what,
                           struct nic **nics, size_t *n);
#define NIC_MAX 32 /* physical devices under one interface that are told apart */
void nic_free(struct nic *v, size_t n);

#endif
