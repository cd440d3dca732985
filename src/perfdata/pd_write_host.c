/* Header features that describe the recording machine, encoded as perf writes them
 * (tools/perf/util/header.c): perf report --header shows them and perf uses cpuid and
 * arch to pick decoders and event tables. */
#include "perfdata/pd_write.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Value of the first "key : value" line of /proc/cpuinfo with this key. */
static int cpuinfo_value(const char *key, char *out, size_t outsz)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[512];
	size_t klen = strlen(key);
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *v;
		if (strncmp(line, key, klen) != 0 || (line[klen] != ' ' && line[klen] != '\t' &&
						      line[klen] != ':'))
			continue;
		v = strchr(line, ':');
		if (!v)
			continue;
		v++;
		while (*v == ' ' || *v == '\t')
			v++;
		v[strcspn(v, "\n")] = 0;
		snprintf(out, outsz, "%s", v);
		found = 1;
	}
	fclose(f);
	return found;
}

static uint64_t total_mem_kb(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	unsigned long long kb = 0;
	char line[256];

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

int pd_writer_feat_host(struct pd_writer *w)
{
	struct utsname u;
	char vendor[64], family[16], model[16], stepping[16], desc[256], cpuid[160];
	uint32_t nr[2];
	uint64_t mem;
	int r;

	if (uname(&u) < 0)
		return -errno;
	if ((r = pd_writer_feat_string(w, PD_FEAT_HOSTNAME, u.nodename)) < 0 ||
	    (r = pd_writer_feat_string(w, PD_FEAT_OSRELEASE, u.release)) < 0 ||
	    (r = pd_writer_feat_string(w, PD_FEAT_VERSION, "xptrace-" XP_VERSION)) < 0 ||
	    (r = pd_writer_feat_string(w, PD_FEAT_ARCH, u.machine)) < 0)
		return r;
	nr[0] = (uint32_t)sysconf(_SC_NPROCESSORS_CONF);
	nr[1] = (uint32_t)sysconf(_SC_NPROCESSORS_ONLN);
	if ((r = pd_writer_feature(w, PD_FEAT_NRCPUS, nr, sizeof(nr))) < 0)
		return r;
	if (cpuinfo_value("model name", desc, sizeof(desc)) &&
	    (r = pd_writer_feat_string(w, PD_FEAT_CPUDESC, desc)) < 0)
		return r;
	/* x86 form perf matches its event tables against: vendor,family,model,stepping. */
	if (cpuinfo_value("vendor_id", vendor, sizeof(vendor)) &&
	    cpuinfo_value("cpu family", family, sizeof(family)) &&
	    cpuinfo_value("model", model, sizeof(model)) &&
	    cpuinfo_value("stepping", stepping, sizeof(stepping))) {
		snprintf(cpuid, sizeof(cpuid), "%s,%s,%s,%s", vendor, family, model, stepping);
		if ((r = pd_writer_feat_string(w, PD_FEAT_CPUID, cpuid)) < 0)
			return r;
	}
	mem = total_mem_kb();
	if (mem && (r = pd_writer_feature(w, PD_FEAT_TOTAL_MEM, &mem, sizeof(mem))) < 0)
		return r;
	return 0;
}
