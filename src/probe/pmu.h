/* sysfs PMU discovery: /sys/bus/event_source/devices/<pmu>/{type, format/<field>, caps/<cap>}
 * under a configurable root (`--sysfs-root DIR`, default "/"), so tests and offline
 * tools can point every reader at a fixture tree.
 *
 * ISA-neutral: this module knows the sysfs ABI (how the kernel spells format bit fields
 * and caps), not what a PMU's fields mean.  Building an Intel PT or LBR perf_event_attr
 * from these descriptors is arch/x86_64's job.
 *
 * Typical use (what arch code does to build an attr):
 *
 *	struct pmu pt;
 *	if (pmu_read(root, "intel_pt", &pt) == 0) {
 *		attr.type = pt.type;
 *		pmu_set(&pt, "cyc", 1, &attr);           // -ENOENT, -ERANGE
 *		pmu_set(&pt, "psb_period", 3, &attr);
 *		pmu_cap_u64(&pt, "num_address_ranges", &n);
 *		pmu_free(&pt);
 *	}
 */
#ifndef PMU_H
#define PMU_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#define PMU_DEVICES_DIR "sys/bus/event_source/devices"

/* Which perf_event_attr word a format field lives in. */
enum pmu_word { PMU_CONFIG, PMU_CONFIG1, PMU_CONFIG2, PMU_CONFIG3, PMU_NWORDS };

/* One format/<name> file, e.g. "config:14-17" or "config1:0-3,8-11".  Value bits are
 * placed into `mask` from its lowest set bit upwards, as the kernel and perf do. */
struct pmu_field {
	char *name;
	enum pmu_word word;
	uint64_t mask;		/* bits of that word this field occupies */
	unsigned width;		/* popcount(mask) */
};

/* One caps/<name> file: the text as the kernel printed it (trailing newline removed). */
struct pmu_cap {
	char *name;
	char *value;
};

struct pmu {
	char *name;
	int type;		/* perf_event_attr.type; -1 when `type` is missing/unreadable */
	int nr_addr_filters;	/* the PMU's nr_addr_filters file, -1 when absent */
	struct pmu_field *fields;	/* sorted by name */
	size_t nfields;
	struct pmu_cap *caps;		/* sorted by name */
	size_t ncaps;
	size_t nbad_formats;	/* format files that did not parse (skipped) */
};

struct pmu_list {
	struct pmu *pmus;	/* sorted by name */
	size_t n;
};

/* Reads one PMU `name` under `sysfs_root` (NULL or "" means "/").
 * Returns 0, -ENOENT when the PMU does not exist, other -errno on read errors. */
int pmu_read(const char *sysfs_root, const char *name, struct pmu *out);
void pmu_free(struct pmu *p);

/* Reads every PMU under sysfs_root.  -ENOENT when the devices directory is missing. */
int pmu_list_read(const char *sysfs_root, struct pmu_list *out);
void pmu_list_free(struct pmu_list *l);
const struct pmu *pmu_list_find(const struct pmu_list *l, const char *name);

/* Parses a format spec ("config:0", "config1:0-3,8", "config2:0-63").
 * Returns 0 or -EINVAL (bad syntax, bit > 63, reversed range, overlapping bits).
 * out->name points at `name` (not copied). */
int pmu_field_parse(const char *name, const char *spec, struct pmu_field *out);
/* Writes the canonical spec of `f` ("config:14-17") into buf. */
void pmu_field_format(const struct pmu_field *f, char *buf, size_t size);

const struct pmu_field *pmu_field_find(const struct pmu *p, const char *name);

/* Scatters `value` into the bits of `f` within words[f->word] (other bits untouched).
 * -ERANGE when value does not fit in f->width bits. */
int pmu_field_put(const struct pmu_field *f, uint64_t value, uint64_t words[PMU_NWORDS]);
/* Gathers the field's value back out of words. */
uint64_t pmu_field_get(const struct pmu_field *f, const uint64_t words[PMU_NWORDS]);

/* Sets named field `name` of `p` in attr->config/config1/config2.
 * -ENOENT when the PMU has no such field, -ERANGE when value does not fit,
 * -EOPNOTSUPP when the field is in config3 (not in this <linux/perf_event.h>). */
int pmu_set(const struct pmu *p, const char *name, uint64_t value, struct perf_event_attr *attr);

/* caps/<name> as text, or NULL. */
const char *pmu_cap_str(const struct pmu *p, const char *name);
/* caps/<name> as a number.  The kernel prints intel_pt caps with "%x" (hex without 0x)
 * and other PMUs' numeric caps with "%d"/"%u"; a "0x" prefix is always hex.
 * -ENOENT when absent, -EINVAL when not a number. */
int pmu_cap_u64(const struct pmu *p, const char *name, uint64_t *out);
/* Number base the kernel uses for numeric caps of PMU `pmu_name`: 16 or 10. */
int pmu_cap_base(const char *pmu_name);

/* Reads a PMU-level attribute file (e.g. "max_nonturbo_ratio", "cpus") into buf,
 * trailing newline removed.  -ENOENT when absent, -ENAMETOOLONG when it does not fit. */
int pmu_attr_read(const char *sysfs_root, const char *pmu_name, const char *attr, char *buf,
		  size_t size);

/* Joins sysfs_root and a path relative to it ("sys/..."), for every sysfs reader.
 * -ENAMETOOLONG when it does not fit. */
int pmu_path(const char *sysfs_root, const char *rel, char *buf, size_t size);

#endif
