/* --insn -F/--fields: perf script's field names for what an instruction line shows,
 * parsed as perf script parses them: "a,b" is exactly those fields, "+a,-b" the
 * default line with a added and b taken away (the two forms do not mix). */
#include <errno.h>
#include <string.h>

#include "views/bb_views.h"
#include "util/xp_err.h"

/* In perf script's order, which is also the order a line shows them in */
static const char *const names[BB_NFIELDS] = {
	[BB_F_COMM] = "comm", [BB_F_TID] = "tid", [BB_F_PID] = "pid", [BB_F_TIME] = "time",
	[BB_F_CPU] = "cpu", [BB_F_IP] = "ip", [BB_F_SYM] = "sym", [BB_F_SYMOFF] = "symoff",
	[BB_F_DSO] = "dso", [BB_F_SRCLINE] = "srcline", [BB_F_INSNLEN] = "insnlen",
	[BB_F_INSN] = "insn", [BB_F_DISASM] = "disasm",
};

const char *bb_field_name(enum bb_field f)
{
	return (unsigned)f < BB_NFIELDS ? names[f] : NULL;
}

/* The field named by the n bytes at s; BB_NFIELDS when none is. */
static int field_of(const char *s, size_t n)
{
	int f = 0;
	while (f < BB_NFIELDS && !(strlen(names[f]) == n && memcmp(names[f], s, n) == 0))
		f++;
	return f;
}

int bb_fields_parse(const char *spec, unsigned dflt, unsigned *out)
{
	unsigned set = 0, add = 0, del = 0;
	char valid[160] = "";

	for (int f = 0; f < BB_NFIELDS; f++)	/* the names, for the messages */
		snprintf(valid + strlen(valid), sizeof(valid) - strlen(valid), "%s%s", f ? ", " : "", names[f]);
	if (!*spec) {	/* perf script refuses it too */
		xp_usage_error("decode", "-F '': no field to show (the fields: %s)", valid);
		return -EINVAL;
	}
	for (const char *p = spec; *p;) {
		size_t n = strcspn(p, ",");
		char sign = *p == '+' || *p == '-' ? *p : 0;
		int f = field_of(p + !!sign, n - !!sign);
		if (f == BB_NFIELDS) {
			xp_usage_error("decode", "-F %s: unknown field '%.*s' (the fields: %s)", spec,
				       (int)(n - !!sign), p + !!sign, valid);
			return -EINVAL;
		}
		if (sign == '+')
			add |= 1u << f;
		else if (sign == '-')
			del |= 1u << f;
		else
			set |= 1u << f;
		p += n + (p[n] == ',');
	}
	if (set && (add | del)) {
		xp_usage_error("decode", "-F %s: give a list of fields or +field/-field changes "
			       "to the default, not both", spec);
		return -EINVAL;
	}
	*out = set ? set : (dflt | add) & ~del;
	if (!*out) {
		xp_usage_error("decode", "-F '%s': no field to show (the fields: %s)", spec, valid);
		return -EINVAL;
	}
	if ((*out & BB_FIELD(SYMOFF)) && !(*out & BB_FIELD(SYM))) {
		xp_usage_error("decode", "-F %s: symoff is the offset of sym: select sym too", spec);
		return -EINVAL;
	}
	return 0;
}
