/* format/<field> specs ("config1:0-3,8") and placing field values into config words. */
#include "probe/pmu.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const word_names[PMU_NWORDS] = { "config", "config1", "config2", "config3" };

/* Parses a decimal bit number 0..63 at *s. */
static int parse_bit(const char **s, unsigned *bit)
{
	unsigned v = 0;
	const char *p = *s;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	while (isdigit((unsigned char)*p)) {
		v = v * 10 + (unsigned)(*p - '0');
		if (v > 63)
			return -EINVAL;
		p++;
	}
	*s = p;
	*bit = v;
	return 0;
}

int pmu_field_parse(const char *name, const char *spec, struct pmu_field *out)
{
	size_t len = strlen(spec), wlen;
	const char *p, *colon, *end;
	uint64_t mask = 0;
	int word = -1;

	while (len > 0 && isspace((unsigned char)spec[len - 1]))
		len--;
	end = spec + len;
	colon = memchr(spec, ':', len);
	if (!colon)
		return -EINVAL;
	wlen = (size_t)(colon - spec);
	for (int i = 0; i < PMU_NWORDS; i++)
		if (strlen(word_names[i]) == wlen && memcmp(spec, word_names[i], wlen) == 0)
			word = i;
	if (word < 0)
		return -EINVAL;
	p = colon + 1;
	for (;;) {
		unsigned lo, hi;
		uint64_t bits;

		if (parse_bit(&p, &lo))
			return -EINVAL;
		hi = lo;
		if (p < end && *p == '-') {
			p++;
			if (parse_bit(&p, &hi) || hi < lo)
				return -EINVAL;
		}
		bits = (hi == 63 ? ~0ULL : (1ULL << (hi + 1)) - 1) & ~((1ULL << lo) - 1);
		if (mask & bits)
			return -EINVAL;
		mask |= bits;
		if (p == end)
			break;
		if (*p != ',')
			return -EINVAL;
		p++;
	}
	out->name = (char *)name;
	out->word = (enum pmu_word)word;
	out->mask = mask;
	out->width = (unsigned)__builtin_popcountll(mask);
	return 0;
}

void pmu_field_format(const struct pmu_field *f, char *buf, size_t size)
{
	size_t n = 0;
	int bit = 0, first = 1;

	if (size == 0)
		return;
	buf[0] = 0;
	n = (size_t)snprintf(buf, size, "%s:", word_names[f->word]);
	while (bit < 64 && n < size) {
		int lo, hi;

		if (!(f->mask >> bit & 1)) {
			bit++;
			continue;
		}
		lo = bit;
		while (bit < 64 && (f->mask >> bit & 1))
			bit++;
		hi = bit - 1;
		if (lo == hi)
			n += (size_t)snprintf(buf + n, size - n, "%s%d", first ? "" : ",", lo);
		else
			n += (size_t)snprintf(buf + n, size - n, "%s%d-%d", first ? "" : ",", lo, hi);
		first = 0;
	}
}

int pmu_field_put(const struct pmu_field *f, uint64_t value, uint64_t words[PMU_NWORDS])
{
	uint64_t w = words[f->word];
	unsigned vbit = 0;

	if (f->width < 64 && value >> f->width)
		return -ERANGE;
	for (int bit = 0; bit < 64; bit++) {
		if (!(f->mask >> bit & 1))
			continue;
		if (value >> vbit & 1)
			w |= 1ULL << bit;
		else
			w &= ~(1ULL << bit);
		vbit++;
	}
	words[f->word] = w;
	return 0;
}

uint64_t pmu_field_get(const struct pmu_field *f, const uint64_t words[PMU_NWORDS])
{
	uint64_t w = words[f->word], v = 0;
	unsigned vbit = 0;

	for (int bit = 0; bit < 64; bit++) {
		if (!(f->mask >> bit & 1))
			continue;
		v |= (w >> bit & 1) << vbit;
		vbit++;
	}
	return v;
}

const struct pmu_field *pmu_field_find(const struct pmu *p, const char *name)
{
	for (size_t i = 0; i < p->nfields; i++)
		if (strcmp(p->fields[i].name, name) == 0)
			return &p->fields[i];
	return NULL;
}

int pmu_set(const struct pmu *p, const char *name, uint64_t value, struct perf_event_attr *attr)
{
	const struct pmu_field *f = pmu_field_find(p, name);
	uint64_t words[PMU_NWORDS];
	int ret;

	if (!f)
		return -ENOENT;
	if (f->word == PMU_CONFIG3)
		return -EOPNOTSUPP;
	words[PMU_CONFIG] = attr->config;
	words[PMU_CONFIG1] = attr->config1;
	words[PMU_CONFIG2] = attr->config2;
	words[PMU_CONFIG3] = 0;
	ret = pmu_field_put(f, value, words);
	if (ret)
		return ret;
	attr->config = words[PMU_CONFIG];
	attr->config1 = words[PMU_CONFIG1];
	attr->config2 = words[PMU_CONFIG2];
	return 0;
}
