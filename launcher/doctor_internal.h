/*
 * doctor_internal.h - what the files of doctor share; for doctor*.c only.
 *
 * doctor.c runs the audit and holds the checks of the CPU, NUMA, IO and
 * files; doctor_memory.c those of THP, swap, overcommit and dirty pages;
 * doctor_hugepages.c whether hugetlbfs holds a service's shared memory;
 * doctor_tiers.c the memory tiers, demotion and NUMA balancing's promotion;
 * doctor_nic.c those of the network card near names (its node, RPS and
 * XPS), and doctor_nic_irqs.c its queue IRQs and irqbalance;
 * doctor_container.c those of the cgroup's limits and the capabilities
 * tunerun needs. Each adds findings to one struct doc.
 */
#ifndef TUNERUN_DOCTOR_INTERNAL_H
#define TUNERUN_DOCTOR_INTERNAL_H

#include <dirent.h>
#include <hwloc/bitmap.h>
#include <stdbool.h>
#include <stddef.h>

#include "doctor.h"

struct doc {
    struct doctor_report r; /* what is found: report.c shows it */
    const char *root;
    const struct profile *p;
    const char *data_dir;
    char disk[64];  /* the data directory's disk, once doctor_check_io() found it */
    bool spinning;  /* ... and whether it is a spinning one */
    bool container; /* audited from inside a container: the host's settings are not its own */
};

/* A malloc()ed message, or NULL for a NULL format (a finding's missing why or fix). */
char *doc_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
/* A finding; the strings are taken over. Inside a container, a host's fix says so. */
void doc_add(struct doc *d, const char *group, const char *id, enum severity sev, char *observed,
             char *why, char *fix, char *persist);
/* Where path is under --root (as it is without one). */
void doc_at_root(const struct doc *d, const char *path, char *full, size_t n);
/* A file's first line, or its leading number, under --root: never through a link to a device. */
bool doc_rd(const struct doc *d, const char *path, char *buf, size_t n);
bool doc_rd_long(const struct doc *d, const char *path, long long *v);
/* A CPU or node list file ("0-7,16") under --root into set; false, set empty, where none is. */
bool doc_rd_list(const struct doc *d, const char *path, hwloc_bitmap_t set);
/* A whole small file under --root (at most max bytes), or NULL. */
char *doc_rd_text(const struct doc *d, const char *path, size_t max);
bool doc_has_file(const struct doc *d, const char *path);
/* A directory under --root, opened inside the tree; NULL with the errno in *error. */
DIR *doc_opendir(const struct doc *d, const char *dir, int *error);
/* A /proc/meminfo field ("Committed_AS") under --root, in kB; 0 where it is missing. */
unsigned long long doc_meminfo_kb(const struct doc *d, const char *field);
/* Active swap areas (/proc/swaps), and whether the profile fears swap or forks to save. */
int doc_swap_areas(const struct doc *d);
bool doc_swap_sensitive(const struct doc *d);
bool doc_forks_to_save(const struct doc *d);
/* nofile raised above the usual 1024: a server of many connections. */
bool doc_many_connections(const struct doc *d);
/* The first of choices a sysfs list offers, or NULL. */
const char *doc_offered(const char *list, const char *const *choices);
/* "mysql", or "the service" without a profile, as findings name it. */
const char *doc_who(const struct doc *d);

void doctor_check_cpu(struct doc *d);
void doctor_check_numa(struct doc *d);
void doctor_check_tiers(struct doc *d);     /* doctor_tiers.c */
void doctor_check_thp(struct doc *d);       /* doctor_memory.c */
void doctor_check_vm(struct doc *d);        /* doctor_memory.c */
void doctor_check_hugepages(struct doc *d); /* doctor_hugepages.c */
void doctor_check_io(struct doc *d);
void doctor_check_nic(struct doc *d); /* doctor_nic.c */

/*
 * doctor_nic_irqs.c, for doctor_nic.c: /proc/interrupts and irqbalance's
 * settings, read once for every card; then nic.irqbalance, and nic.irqs
 * for each card against the CPUs of its node.
 */
struct nic;
struct nic_irqs;
struct nic_irqs *nic_irqs_read(struct doc *d);
void nic_irqs_free(struct nic_irqs *irqs);
void doctor_check_irqbalance(const struct nic_irqs *irqs);
void doctor_check_irqs(const struct nic_irqs *irqs, const struct nic *nic,
                       hwloc_const_bitmap_t node);
void doctor_check_files(struct doc *d);
void doctor_check_cgroup(struct doc *d); /* doctor_container.c */
void doctor_check_caps(struct doc *d);   /* doctor_container.c */

#endif
