/* Gather (live) and conclude in one call, for commands other than info. */
#include "probe.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

int probe_sysfs_is_live(const char *root)
{
	char real[PATH_MAX];

	if (!root || !*root)
		return 1;
	return realpath(root, real) && strcmp(real, "/") == 0;
}

int probe_machine(const char *sysfs_root, struct pmu_list *pmus, struct probe_facts *f,
		  struct probe_conclusion *out)
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
	probe_live(facts, live, live && pt ? pt->type : -1);
	if (pmu_path(sysfs_root, PMU_DEVICES_DIR, label, sizeof(label)) != 0)
		strcpy(label, PMU_DEVICES_DIR);
	probe_conclude(l, label, facts, out);
	if (!pmus)
		pmu_list_free(l);
	return ret;
}
