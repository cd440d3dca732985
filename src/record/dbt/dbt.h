/* --mode dbt (rec_mode_dbt.c) as `xptrace info` describes it. */
#ifndef DBT_H
#define DBT_H

#include <stddef.h>

/* What --mode dbt would run here, in words for info: "valgrind-3.19.0 with xptrace's
 * tool (DIR)", or why it cannot ("valgrind is not in PATH", "xptrace was built without
 * its valgrind tool").  Returns 1 when it can record, 0 when not. */
int dbt_status(char *text, size_t n);

#endif
