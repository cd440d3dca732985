/* Gather (live) and conclude in one call, for commands other than info. */
#include "probe/probe.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int probe_sysfs_is_live(const char *root)
{
	char real[PATH_MAX];

	if (!root || !*root)
		return 1;
	return realpath(root, real) && strcmp(real, "/") == 0;
}

void probe_sysfs_label(const char *root, char *label, size_t size)
{
	if (pmu_path(root, PMU_DEVICES_DIR, label, size) != 0)
		snprintf(label, size, "%s", PMU_DEVICES_DIR);
}

int probe_machine(const char *sysfs_root, struct pmu_list *pmus, struct probe_facts *f,
		  struct probe_conclusion *out, int uprobe)
{
	struct pmu_list own;
	struct probe_facts own_facts;
	struct pmu_list *l = pmus ? pmus : &own;
	struct probe_facts *facts = f ? f : &own_facts;
	const struct pmu *pt;
	char label[PATH_MAX];
	int live = probe_sysfs_is_live(sysfs_root), ret;

	ret = pmu_list_read(sysfs_root, l);
	pt = pmu_list_find(l, "intel_pt");
	probe_live(facts, live, live && pt ? pt->type : -1,
		   live && uprobe ? pmu_list_find(l, "uprobe") : NULL);
	if (live && !uprobe)
		snprintf(facts->uprobe.note, sizeof(facts->uprobe.note), "not needed here");
	probe_sysfs_label(sysfs_root, label, sizeof(label));
	probe_conclude(l, label, facts, out);
	if (!pmus)
		pmu_list_free(l);
	return ret;
}

void probe_refute(const char *sysfs_root, const struct pmu_list *pmus, struct probe_facts *f,
		  enum probe_mode_id mode, int err, struct probe_conclusion *out)
{
	struct probe_check *c[PROBE_NMODES] = {
		[PROBE_MODE_PT] = &f->pt,
		[PROBE_MODE_LBR] = &f->lbr,
		[PROBE_MODE_SAMPLE] = &f->cpu_clock,
		[PROBE_MODE_STEP] = &f->ptrace,
	};
	char label[PATH_MAX];

	c[mode]->status = PROBE_FAIL;
	c[mode]->err = err;
	probe_sysfs_label(sysfs_root, label, sizeof(label));
	probe_conclude(pmus, label, f, out);
}
