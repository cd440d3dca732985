/* The byte stream the xptdbt valgrind tool writes per process (PREFIX.<pid>) and
 * src/record/dbt/dbt_read.c reads.  Little-endian, unaligned.
 *
 * Written inline by the translated code (no time):
 *   0 / 1        a conditional branch: not taken / taken
 *   XD_TIP u64   an indirect jump, call or return went to the address
 * Written by the tool's callbacks: tag, u64 CLOCK_MONOTONIC ns, then words:
 *   XD_START pid parent_tid n, then n bytes: the program valgrind runs, then u64 m
 *                and m bytes: VEX's hardware capabilities, which its CPUID reports
 *                to the program ("amd64-cx16-...-avx2")
 *                (an exec appends a new XD_START to the same file; a fork's child
 *                starts its own file with its parent's tid)
 *   XD_SWITCH tid pid       the records that follow are this kernel thread's
 *   XD_THREAD ptid ip       the current thread starts at ip (ptid: its creator, 0 none)
 *   XD_DISABLE ip           a syscall at ip: tracing stops
 *   XD_ENABLE ip            tracing resumes at ip
 *   XD_SIGNAL from to sig   a signal handler at `to` interrupts the thread at `from`
 *   XD_MMAP addr len off n, then n bytes of file name (n = 0: anonymous)
 *   XD_EXIT                 the current thread exits */
#ifndef XD_STREAM_H
#define XD_STREAM_H

#define XD_TIP 2
#define XD_START 0x10
#define XD_SWITCH 0x11
#define XD_THREAD 0x12
#define XD_DISABLE 0x13
#define XD_ENABLE 0x14
#define XD_SIGNAL 0x15
#define XD_MMAP 0x16
#define XD_EXIT 0x17

#endif
