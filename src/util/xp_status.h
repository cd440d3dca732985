/* A one-line live status on stderr ("\r...", redrawn in place), for long recordings
 * and decodes.  Only on a terminal: a redirected stderr gets nothing, so logs and
 * pipes stay free of carriage returns.  Messages through xp_err/xp_warn clear the line
 * first, so they never mix with it. */
#ifndef XP_STATUS_H
#define XP_STATUS_H

/* Turns the status on when `want` and stderr is a terminal; the first line shows
 * after `delay_ms` (a short run shows none; XPTRACE_STATUS_DELAY_MS overrides it). */
void xp_status_start(int want, unsigned delay_ms);
/* 1 when a redraw is due (on, past the delay, 250 ms since the last one). */
int xp_status_due(void);
/* Seconds since xp_status_start. */
double xp_status_elapsed(void);
/* Draws "xptrace: <text>" over the previous status line. */
void xp_status_show(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Erases the line (when one is shown); the status stays on. */
void xp_status_clear(void);
/* Erases the line and turns the status off. */
void xp_status_stop(void);

#endif
