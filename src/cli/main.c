/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kiln's entry point (cli stage): picks the subcommand, prints help, and
 * holds the helpers every command uses for messages and files.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "kiln-version.h"
#include "format/format.h"
#include "profile/profile.h"
#include "session/replay.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/file.h"
#include "util/limit.h"
#include "util/workers.h"
#include "symbolize/symbolize.h"

bool kiln_cli_quiet;

struct kiln_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	const char *usage;
	/* If set: the formats kiln writes (format/registry.c) follow usage,
	 * then this. */
	const char *usage_after_formats;
};

static const struct kiln_cmd kiln_cmds[] = {
	{ "record", kiln_cmd_record, "CPU (or any event) profile of a command, processes or the machine",
	  "usage: kiln record [options] -- CMD [ARGS...]\n"
	  "       kiln record [options] -p PID[,PID...] | -t TID[,TID...] [--duration S]\n"
	  "       kiln record [options] -a [-C CPUS] [--duration S] [-- CMD...]\n"
	  "\n"
	  "Samples every thread of the command (children and new threads\n"
	  "followed), of running processes, or of every process on the machine\n"
	  "through perf_event_open, unwinds the stacks, symbolizes them on the\n"
	  "spot (function, file, line, inlined frames, build IDs, JIT code from\n"
	  "/tmp/perf-PID.map, PLT stubs as NAME@plt) and writes a self-contained\n"
	  "pprof file that any machine can read.  Stops when the command exits,\n"
	  "after --duration, or on SIGINT/SIGTERM to kiln, which then sends the\n"
	  "command SIGTERM, as perf does; the command's exit status becomes\n"
	  "kiln's.  The output path is checked before anything runs.\n"
	  "\n"
	  "  -F, --freq HZ          samples per second (default 99)\n"
	  "  -e, --event EV         cpu-clock (default), task-clock, page-faults,\n"
	  "                         context-switches, cycles, instructions, ...,\n"
	  "                         or a tracepoint: syscalls:sys_enter_getrandom\n"
	  "  -c, --count N          sample every N events instead of -F\n"
	  "  -g                     the default call graph (accepted as perf's -g)\n"
	  "      --call-graph M     fp (frame pointers), dwarf[,BYTES] (copy BYTES\n"
	  "                         of stack per sample and unwind with DWARF CFI,\n"
	  "                         default 32768; only the filled part is kept),\n"
	  "                         auto (default: DWARF where the code has CFI,\n"
	  "                         frame pointers where it has none, as in JIT\n"
	  "                         code; with -a the default is fp; with\n"
	  "                         --off-cpu and --wall 2048 bytes, the CFI of\n"
	  "                         the frames near the leaf joined to the\n"
	  "                         frame-pointer chain)\n"
	  "  -m, --mmap-pages N     ring buffer data pages per CPU, a power of 2\n"
	  "                         (default 1024; 4096 with stack copies; 8192\n"
	  "                         for counting events on up to 16 CPUs, which\n"
	  "                         copy 8 KiB of stack by default so that a\n"
	  "                         burst fits)\n"
	  "  -o, --output FILE      default kiln.cpu.pb.gz\n"
	  "  -p, --pid PID[,PID]    record running processes (all their threads)\n"
	  "  -t, --tid TID[,TID]    record these threads only\n"
	  "  -a, --all-cpus         every process on every CPU (root or\n"
	  "                         kernel.perf_event_paranoid <= 0); kiln's own\n"
	  "                         samples are left out\n"
	  "  -C, --cpu CPUS         every process on these CPUs only: 0,2-3\n"
	  "      --duration S       stop after S seconds\n"
	  "      --kernel           kernel frames too (root or\n"
	  "                         kernel.perf_event_paranoid <= 1); without it,\n"
	  "                         time in the kernel is counted on the user\n"
	  "                         stack where the kernel may be sampled, and the\n"
	  "                         summary says when it may not\n"
	  "      --mode perf        sample through perf_event_open (the default)\n"
	  "      --mode inject      sample in-process with the preload agent\n"
	  "                         (libkiln.so), where perf_event_open is refused;\n"
	  "                         CPU time of a command only (with --wall: every\n"
	  "                         thread, running or waiting), no kernel frames\n"
	  "      --off-cpu          time each thread spends off CPU, with the\n"
	  "                         stack at which it left (sched:sched_switch,\n"
	  "                         root): off-cpu/nanoseconds, state label\n"
	  "      --wall             on-CPU samples and off-CPU time together:\n"
	  "                         wall/nanoseconds adding up to each thread's\n"
	  "                         wall time, state=running|runnable|sleeping|\n"
	  "                         blocked-io (root; without root: --wall --mode\n"
	  "                         inject)\n"
	  "  -q, --quiet            no progress line\n"
	  "\n"
	  "Labels: pid, comm (the process's name), thread, thread_name, time (ns\n"
	  "since the start).  Sample types: samples/count and cpu/nanoseconds\n"
	  "(EVENT/count for other events).  The profile's comment is the recorded\n"
	  "command line.  A counting event (a tracepoint, -c 1) is reported with\n"
	  "its own count; records lost are added to the stacks recorded next to\n"
	  "the loss, so that the values add up to the count, with a warning.\n"
	  "\n"
	  "Examples:\n"
	  "  kiln record -F 999 -- ./server --port 8080 && kiln flame kiln.cpu.pb.gz\n"
	  "  kiln record -a -g --duration 10 -o all.pb.gz\n" },
	{ "heap", kiln_cmd_heap, "heap profile of a command: allocations, peak, leaks",
	  "usage: kiln heap [options] -- CMD [ARGS...]\n"
	  "\n"
	  "Runs the command with libkiln-malloc.so (kiln's malloc interposer) and\n"
	  "libkiln.so preloaded, which stream every heap event (malloc, free,\n"
	  "realloc, ... with its call stack) to a compressed\n"
	  "trace that survives a crash or SIGKILL.  When the command ends, kiln\n"
	  "reads the trace and prints the number of allocation calls, temporary\n"
	  "allocations (freed at once), blocks freed by another thread, bytes\n"
	  "allocated, the peak heap size and when it was reached, the memory\n"
	  "leaked (live at exit), and the top call sites of each.  It writes:\n"
	  "  PREFIX.trace.zst   the trace (kiln top/flame/convert read it too,\n"
	  "                     --sample-type allocated|calls|peak|leaked|temporary)\n"
	  "  PREFIX.heap.pb.gz  pprof heap profile: alloc_objects, alloc_space,\n"
	  "                     inuse_objects, inuse_space (live at exit),\n"
	  "                     peak_objects, peak_space (live at the peak)\n"
	  "  PREFIX.heap.svg    memory over time, the largest sites stacked\n"
	  "Processes the command forks or starts write PREFIX.trace.zst.PID: kiln\n"
	  "names each one written during the run (the summary is the first\n"
	  "process's).  The command's exit status becomes kiln's (128+N if killed\n"
	  "by signal N); Ctrl-C and SIGTERM reach the command.\n"
	  "\n"
	  "  -o, --output PREFIX    file name prefix (default kiln)\n"
	  "      --sample BYTES     sample one allocation per BYTES allocated on\n"
	  "                         average, scaled back in every number (default\n"
	  "                         0: trace every allocation)\n"
	  "  -n, --top N            sites listed per measure (default 5)\n"
	  "  -q, --quiet            only the summary\n"
	  "\n"
	  "Environment: KILN_HEAP_CLOCK=auto|tsc|monotonic, the clock events are\n"
	  "timed with (auto: the TSC where the kernel's clocksource is the TSC;\n"
	  "the trace's times are CLOCK_MONOTONIC either way, see docs/heap.md).\n"
	  "\n"
	  "Example:\n"
	  "  kiln heap -o srv -- ./server --port 8080 && kiln flame srv.trace.zst "
	  "--sample-type peak\n" },
	{ "stat", kiln_cmd_stat, "count events of a command, processes or CPUs (perf stat)",
	  "usage: kiln stat [options] -- CMD [ARGS...]\n"
	  "       kiln stat [options] -p PID[,PID...] [--duration S | -- sleep S]\n"
	  "       kiln stat [options] -a [-C CPUS] [--duration S | -- sleep S]\n"
	  "\n"
	  "Counts events (no sampling) while the command runs, as perf stat does,\n"
	  "and prints each count with its derived metric (CPUs utilized, rate per\n"
	  "second, GHz, insn per cycle, % of all branches, miss ratios) and the\n"
	  "elapsed, user and sys times, on stderr.  Counters the kernel had to\n"
	  "multiplex are scaled by time enabled/running, with the running share\n"
	  "shown; events the machine lacks print <not supported>.  The command's\n"
	  "exit status becomes kiln's; Ctrl-C prints the totals so far.\n"
	  "\n"
	  "  -e, --event EV,...     events (default: task-clock, context-switches,\n"
	  "                         cpu-migrations, page-faults, cycles,\n"
	  "                         instructions, branches, branch-misses); {a,b}\n"
	  "                         is a group counted together; 'kiln list'\n"
	  "                         shows the names; EV:u / EV:k user or kernel only\n"
	  "  -p, --pid PID[,PID]    count running processes (all their threads)\n"
	  "  -a, --all-cpus         count every CPU (root or perf_event_paranoid <= 0)\n"
	  "  -C, --cpu CPUS         count these CPUs only: 0-3,5\n"
	  "      --duration S       stop after S seconds\n"
	  "  -I, --interval-print MS  print the counts of each MS milliseconds\n"
	  "  -r, --repeat N         run the command N times: means and +- spread\n"
	  "      --per-thread       one line per thread of -p PID (comm-tid)\n"
	  "  -x, --field-separator SEP  CSV: value,unit,event,runtime,%running,\n"
	  "                         metric,metric unit (as perf stat -x)\n"
	  "      --json             one JSON object per line with perf's fields\n"
	  "  -o, --output FILE      write the counts to FILE, not stderr\n"
	  "\n"
	  "Example:\n"
	  "  kiln stat -e task-clock,page-faults,syscalls:sys_enter_getrandom -- python3 -c 'import os; os.urandom(8)'\n" },
	{ "list", kiln_cmd_list, "events this machine can count or record",
	  "usage: kiln list [--all] [FILTER]\n"
	  "\n"
	  "Lists software, hardware, hardware-cache and kernel PMU events (from\n"
	  "/sys/bus/event_source/devices) and tracepoints (from tracefs), grouped\n"
	  "as perf list groups them.  Each event is opened once with\n"
	  "perf_event_open: only those that can be counted here are shown, so none\n"
	  "reads <not supported> later (the tracepoints share one probe).\n"
	  "\n"
	  "  FILTER                 a part of the name (sched), a glob\n"
	  "                         ('syscalls:*getrandom'), or a kind: sw, hw,\n"
	  "                         cache, pmu, tracepoint\n"
	  "      --all              also the events that cannot be counted here,\n"
	  "                         marked (not supported here) or (not allowed here)\n"
	  "\n"
	  "Example:\n"
	  "  kiln list sched\n" },
	{ "top", kiln_cmd_top, "text table of the hottest functions",
	  "usage: kiln top [options] [BINARY] FILE|URL...\n"
	  "\n"
	  "Prints a table like `pprof -top`: flat, flat%, sum%, cum, cum%, name.\n"
	  "FILE is pprof (.pb.gz or .pb), perf.data (perf record's own file,\n"
	  "also pipe mode), perf script text, collapsed stacks, speedscope\n"
	  "JSON, a Chrome/Node .cpuprofile (or Chrome trace events), a\n"
	  "gperftools CPU profile or a legacy text profile (tcmalloc heap,\n"
	  "growth, contention, threadz, Go, Java), valgrind massif's\n"
	  "massif.out or a heaptrack trace (.zst, .gz); the format is detected from\n"
	  "the content.  Text may be UTF-16 or UTF-8 with a byte order mark,\n"
	  "with CRLF line ends; malformed lines among good ones are skipped\n"
	  "with a warning.\n"
	  "\n"
	  "FILE or URL: an http:// or https:// URL is fetched as go tool pprof\n"
	  "fetches it (kiln top 'http://HOST:PORT/debug/pprof/profile?seconds=5'\n"
	  "of a program run with KILN_HTTP), here and in flame, callgraph,\n"
	  "convert and serve.\n"
	  "\n"
	  "BINARY (an ELF program before the profiles, as pprof takes it) names\n"
	  "the addresses of the profiles' main mapping (the one with its build\n"
	  "ID, else the first) whatever path the profile names: a profile taken\n"
	  "on another machine or of a binary moved since; also in flame,\n"
	  "callgraph and convert.\n"
	  "\n"
	  "  -n, --nodes N         show the N heaviest rows (default 20; 0: all)\n"
	  "      --cum             sort by cumulative value instead of flat\n"
	  "      --lines           one row per source line instead of per function\n"
	  "      --addresses       one row per address (pprof -addresses): frames named\n"
	  "                        by their module ([libfoo.so]) stay apart\n"
	  "      --sample-type T   which value to show (e.g. cpu, samples,\n"
	  "                        alloc_space; default: the profile's default)\n"
	  "      --event NAME      of a perf.data of several events, read only\n"
	  "                        NAME's samples (e.g. page-faults; without it\n"
	  "                        each event is a sample type of its own)\n"
	  "      --focus RE        keep only stacks with a frame matching RE\n"
	  "      --ignore RE       drop stacks with a frame matching RE\n"
	  "      --hide RE         remove the frames whose function matches RE\n"
	  "                        from every stack (the samples stay)\n"
	  "      --transform LIST  rewrite every stack by LIST, in order (after\n"
	  "                        focus, ignore and hide), as kiln serve's tf=:\n"
	  "                        CODE:ARG items separated by ';': mf:F merge\n"
	  "                        function, mcn:A/B merge call node, f:A/B focus\n"
	  "                        on subtree, ff:F focus on function, df:F drop\n"
	  "                        function, cl:LIB collapse library (libc.so.6),\n"
	  "                        rec:F collapse recursion, drec:F collapse\n"
	  "                        direct recursion ('\\' before a ';' or '/' in\n"
	  "                        a name)\n"
	  "      --no-local-symbols  never open this machine's files to symbolize\n"
	  "                        the addresses a profile or trace names (nor a\n"
	  "                        perf.data's /tmp/perf-PID.map JIT maps, read\n"
	  "                        otherwise when root or you own them, as perf\n"
	  "                        report does)\n"
	  "  -q, --quiet           no progress output\n"
	  "\n"
	  "Environment (also for flame, convert and heap):\n"
	  "  KILN_MAX_INPUT=SIZE   the most a decompressed input or one that is\n"
	  "                        not a regular file may hold (default 4G)\n"
	  "  KILN_NO_LOCAL_SYMBOLS=1   as --no-local-symbols\n"
	  "  KILN_THREADS=N        threads reading one input uses: a large perf\n"
	  "                        script text, a heap trace (default: the CPUs\n"
	  "                        kiln may use, while a second one pays; 1: one)\n"
	  "  KILN_HTTP_TOKEN=TOKEN  sent as 'Authorization: Bearer TOKEN' to a URL\n"
	  "  KILN_CACHE_DIR=DIR    where decompressed separate debug files are\n"
	  "                        kept (default ~/.cache/kiln/debug; empty: no\n"
	  "                        cache; docs/symbols.md)\n"
	  "\n"
	  "Examples:\n"
	  "  kiln top -n 10 kiln.cpu.pb.gz\n"
	  "  perf record -g -- ./server && kiln top perf.data\n"
	  "  kiln top 'http://127.0.0.1:6060/debug/pprof/profile?seconds=5'\n" },
	{ "flame", kiln_cmd_flame, "interactive flame graph (SVG)",
	  "usage: kiln flame [options] [BINARY] FILE|URL [-o OUT.svg]\n"
	  "\n"
	  "Writes a self-contained interactive flame graph: hover for name, value\n"
	  "and percentage, click to zoom, Ctrl-F or the Search button to highlight\n"
	  "matches (the matched percentage is shown), Reset Zoom to go back.\n"
	  "\n"
	  "  -o, --output FILE     where to write (default: FILE's name + .svg,\n"
	  "                        a URL's last path part + .svg; - for\n"
	  "                        standard output)\n"
	  "      --title TEXT      the title (default: \"Flame Graph\", \"Icicle Graph\" with\n"
	  "                        --reverse, \"Differential Flame Graph\" with --diff)\n"
	  "      --reverse         leaf functions at the top, callers below\n"
	  "                        (an icicle graph of who calls the hot code)\n"
	  "      --diff BASE       differential graph: widths from FILE, red where\n"
	  "                        a frame grew since BASE, blue where it shrank\n"
	  "                        (heap sizes and counts by value, as pprof's\n"
	  "                        -base; times and samples by share of each total)\n"
	  "      --diff-by function  match BASE by function, not by the path of\n"
	  "                        callers: a frame's colour is its part of its\n"
	  "                        function's change (default: path)\n"
	  "      --absolute        compare values with BASE's as they are\n"
	  "      --normalize       compare shares: BASE scaled to FILE's total\n"
	  "                        (pprof's -normalize)\n"
	  "      --width PX        image width (default 1200)\n"
	  "      --sample-type T   which value to draw\n"
	  "      --event NAME      of a perf.data, read only NAME's samples\n"
	  "      --focus RE, --ignore RE, --hide RE   as for kiln top\n"
	  "      --transform LIST  as for kiln top\n"
	  "      --no-local-symbols  never open this machine's files to symbolize\n"
	  "                        the addresses a profile or trace names\n"
	  "  -q, --quiet           no progress output\n"
	  "\n"
	  "Example:\n"
	  "  kiln flame perf.script -o cpu.svg\n" },
	{ "callgraph", kiln_cmd_callgraph, "call graph (SVG, PNG, PDF or DOT) like gprof2dot and pprof",
	  "usage: kiln callgraph [options] [BINARY] FILE|URL [-o OUT.svg|OUT.dot|OUT.png|OUT.pdf]\n"
	  "\n"
	  "Draws the call graph: a box per function with its total (time in it\n"
	  "and its callees) and self (time in it alone) as percentages of the\n"
	  "whole, coloured by total from blue (cold) to red (hot) and with text\n"
	  "sized by self; an arrow per call with its percentage, thicker when\n"
	  "heavier.  Small nodes and edges are pruned as pprof does; calls\n"
	  "through pruned frames become dashed arrows so the graph stays\n"
	  "connected.  The legend gives the totals and what was dropped.  Laid\n"
	  "out in process with graphviz's library (no dot program needed).\n"
	  "\n"
	  "  -o, --output FILE       where to write; the format follows the\n"
	  "                          extension: .svg .png .pdf, .dot/.gv for\n"
	  "                          the DOT text, SVG without one (default:\n"
	  "                          FILE's name + .callgraph.svg; - for\n"
	  "                          standard output)\n"
	  "      --format F          svg, png, pdf or dot, whatever the name\n"
	  "      --node-fraction F   drop nodes whose total is below F of the\n"
	  "                          whole (default 0.005)\n"
	  "      --edge-fraction F   drop edges below F (default 0.001)\n"
	  "  -n, --nodes N           keep at most N nodes (default 80; 0: all)\n"
	  "      --lines             a node per source line\n"
	  "      --diff BASE         colour by change of each node's share since\n"
	  "                          BASE: red grew, blue shrank\n"
	  "      --sample-type T     which value to draw\n"
	  "      --event NAME        of a perf.data, read only NAME's samples\n"
	  "      --focus RE, --ignore RE, --hide RE   as for kiln top\n"
	  "      --transform LIST  as for kiln top\n"
	  "  -q, --quiet             no progress output\n"
	  "\n"
	  "Example:\n"
	  "  kiln callgraph perf.script -o cpu.svg\n" },
	{ "serve", kiln_cmd_serve, "local web UI: flame graph, top, call tree, call graph, timeline",
	  "usage: kiln serve [options] FILE|URL... [--diff BASE]\n"
	  "\n"
	  "Reads the profiles once (any format kiln reads: pprof, perf.data,\n"
	  "perf script text, collapsed stacks, speedscope JSON, Chrome/Node\n"
	  ".cpuprofile, gperftools, legacy text profiles, kiln heap traces,\n"
	  "massif.out, heaptrack traces; see kiln help top; a URL is fetched\n"
	  "and named by itself) after the server listens (the URL comes first;\n"
	  "the page shows the reading), stops at a bad one, and serves a web UI\n"
	  "on loopback until Ctrl-C.  No request waits for another: a heap\n"
	  "trace's time range is analysed (from the trace's time index) without\n"
	  "holding up other requests; a newer range cancels an older one, and the\n"
	  "page shows a busy state with the server's progress (/api/status).\n"
	  "The aggregation happens here, in C; the browser receives only what\n"
	  "it draws.  Views: flame graph and icicle on a canvas (hover, click to\n"
	  "zoom, breadcrumbs, search with the matched share, keyboard), the top\n"
	  "table (the numbers of kiln top; sortable, filterable), the call graph\n"
	  "(kiln callgraph's, drawn by graphviz), a function's cost per source\n"
	  "line with its text, the sandwich of one function (its callers and\n"
	  "callees), the call tree as an expandable table (total, self and\n"
	  "share per node, top-down or inverted, opened on the hot path,\n"
	  "arrow keys; sent a node's children at a time), and a summary\n"
	  "(command line, host, event and period, duration, samples and lost,\n"
	  "processes and threads; a heap trace's calls, temporary, peak and\n"
	  "leaked, as kiln heap prints them).  A heap trace also gets a Heap\n"
	  "tab: memory per allocation site over time (the top sites stacked,\n"
	  "the rest as other, a legend of distinct labels), allocations and\n"
	  "temporary allocations over time, the size histogram, and the list\n"
	  "of allocations filtered by alive at a moment, lifetime, size and\n"
	  "site, read from the trace's time index.  A label bar keeps or drops\n"
	  "samples by any label's value (pid, thread, thread_name, a pprof's\n"
	  "own) and groups every view by one label.  Stack transforms, from the\n"
	  "flame graph's and call tree's context menus (merge a function or a\n"
	  "call node, focus on a subtree or a function, collapse a library or\n"
	  "recursion, drop a function), rewrite every view's stacks in order;\n"
	  "they are shown as removable breadcrumbs and kept in the URL (tf=,\n"
	  "the list kiln top --transform takes).  A function's disassembly\n"
	  "shows its instructions (decoded by capstone from the binary the\n"
	  "profile mapped, its build ID checked) with the samples at each and\n"
	  "its source lines between them.  Inputs whose samples carry times (kiln\n"
	  "record, perf script, perf.data) get a strip per thread over time: a\n"
	  "drag selects a time range that every view then holds to; and a stack\n"
	  "chart: one thread's samples in time order, the server sending the\n"
	  "runs of identical stacks of the visible window at its resolution.\n"
	  "The flame graph, icicle and stack chart zoom with the wheel and pan\n"
	  "with a drag, with a minimap; siblings can be ordered left-heavy; the\n"
	  "call graph pans and zooms with readable text and has a node menu\n"
	  "(focus, ignore, hide, show from, sandwich).  Sample\n"
	  "type, focus and ignore are controls; every piece of view state is in\n"
	  "the URL.  The page's save link writes it as one HTML file that opens\n"
	  "from file:// with no kiln and no network, holding the selection's\n"
	  "views for every sample type: flame graph, icicle, top (with deltas),\n"
	  "call tree, summary, call graph, the sandwich, source and disassembly\n"
	  "of its 30 hottest functions, and the stack chart of its busiest threads over\n"
	  "its time span at 4000 pixels (docs/kiln-serve.md, \"The saved page\").\n"
	  "The JSON API under /api/ is described in docs/kiln-serve.md.\n"
	  "\n"
	  "      --http ADDR       where to listen (default 127.0.0.1:8080):\n"
	  "                        HOST:PORT, [IPV6]:PORT, or PORT, :PORT and :\n"
	  "                        (loopback, as pprof -http); 0.0.0.0:PORT for\n"
	  "                        every address (a token is then demanded);\n"
	  "                        port 0 or none picks a free one\n"
	  "      --token TOKEN     demand TOKEN (made at start when not on\n"
	  "                        loopback): the printed URL carries it\n"
	  "      --source-path DIR[:DIR...]  where the source view looks for\n"
	  "                        files (besides the working directory and\n"
	  "                        the programs' compile folders), as pprof's\n"
	  "      --trim-path PREFIX[:...]  a build prefix to drop from the\n"
	  "                        profile's paths before looking there\n"
	  "      --diff BASE       compare with BASE: the flame graph and the call\n"
	  "                        graph colour what grew red and what shrank\n"
	  "                        blue (shares of each total compared); the top\n"
	  "                        table shows each function's change\n"
	  "      --diff-by function  match BASE by function in the flame graph,\n"
	  "                        not by the path of callers (default: path)\n"
	  "      --event NAME      of a perf.data of several events, read only\n"
	  "                        NAME's samples (without it: a sample type\n"
	  "                        per event)\n"
	  "      --cache-mb N      memory for the views made (filtered copies and\n"
	  "                        their trees), least recently used dropped\n"
	  "                        first (default 512)\n"
	  "  -q, --quiet           no progress output\n"
	  "\n"
	  "The URL is printed on standard output as soon as the server listens,\n"
	  "before the inputs are read; requests for data wait for them.\n"
	  "Under load: requests are answered side by side; each selection\n"
	  "(input, type, filters, transforms, range) is computed once and kept\n"
	  "in the cache, a few at a time (one per CPU); a request with page=ID\n"
	  "and seq=N stops the computation of an older seq of the same page\n"
	  "(the page sends them); after 5 s without requests the filtered views\n"
	  "go and the memory returns to the system (docs/kiln-serve.md, \"Load\").\n"
	  "\n"
	  "Example:\n"
	  "  kiln serve kiln.cpu.pb.gz perf.script   # then open http://127.0.0.1:8080/\n"
	  "  # http://127.0.0.1:8080/#v=calltree  the call tree; #v=summary  the summary\n"
	  "  kiln heap -o srv -- ./server && kiln serve srv.trace.zst\n"
	  "  # http://127.0.0.1:8080/#v=heap  the heap views (per site, allocations)\n" },
	{ "diff", kiln_cmd_diff, "per-function change between two sets of profiles, with a CI verdict",
	  "usage: kiln diff [options] BASE NEW\n"
	  "       kiln diff [options] BASE... -- NEW...\n"
	  "  (each a FILE or URL, in any format kiln reads)\n"
	  "\n"
	  "Compares each function's share of its profile, flat (as the leaf)\n"
	  "and cum (anywhere in the stack), between BASE and NEW: the change in\n"
	  "points (new% - base%) with a confidence interval from a bootstrap\n"
	  "over the samples, and over the profiles too when a side has several\n"
	  "(repeated runs of a benchmark: their spread counts).  The intervals\n"
	  "are simultaneous over every tested function and both columns (a\n"
	  "max-|t| bootstrap), so that with 95% confidence none of them is\n"
	  "called changed by chance.  Functions with fewer than --min-samples\n"
	  "samples on both sides are listed, untested.  The same inputs and\n"
	  "seed give the same numbers.  Also writes the differential flame\n"
	  "graph (widths from NEW, red grew, blue shrank; kiln flame --diff).\n"
	  "\n"
	  "      --fail-on PCT     the CI gate: exit 1 when some function's\n"
	  "                        share grew for sure (its interval above 0) by\n"
	  "                        PCT points or more for all the data can tell\n"
	  "                        (its interval reaches PCT), and name it;\n"
	  "                        PCT as 5% or 5\n"
	  "      --format F        text (default), json, or markdown (a pull\n"
	  "                        request comment); --json, --markdown\n"
	  "  -o, --output FILE     the report to FILE (default: standard output)\n"
	  "      --svg FILE        the differential flame graph (default: NEW's\n"
	  "                        name + .diff.svg in the current folder)\n"
	  "      --no-svg          no flame graph\n"
	  "  -n, --nodes N         rows shown in text and Markdown (default 20,\n"
	  "                        0: all; regressions always)\n"
	  "      --confidence C    of the intervals (default 0.95; 95% too)\n"
	  "      --resamples N     bootstrap replicates (default 1000)\n"
	  "      --seed N          the bootstrap's seed (default 1)\n"
	  "      --min-samples N   test a function with N samples or more on a\n"
	  "                        side (default 10)\n"
	  "      --sample-type T   which value to compare (the same in every\n"
	  "                        profile; samples behind it: the profile's\n"
	  "                        count type, else value / period)\n"
	  "      --event NAME      of a perf.data, read only NAME's samples\n"
	  "      --focus RE, --ignore RE, --hide RE   as for kiln top\n"
	  "      --transform LIST  as for kiln top\n"
	  "      --no-local-symbols  never open this machine's files to symbolize\n"
	  "  -q, --quiet           no progress output\n"
	  "\n"
	  "Exit status: 0 no regression (or no --fail-on), 1 a regression,\n"
	  "2 a usage error or an unreadable input.\n"
	  "\n"
	  "Examples:\n"
	  "  kiln diff base.pb.gz new.pb.gz\n"
	  "  kiln diff --fail-on 5% --markdown -o comment.md \\\n"
	  "      base1.pb.gz base2.pb.gz base3.pb.gz -- new1.pb.gz new2.pb.gz new3.pb.gz\n" },
	{ "convert", kiln_cmd_convert, "convert between profile formats",
	  "usage: kiln convert [options] [BINARY] IN... -o OUT [--to FORMAT]\n"
	  "  (IN: a FILE or URL)\n"
	  "\n"
	  "Converts a profile.  Input formats are detected from the content:\n"
	  "pprof (gzip or not), perf.data, perf script text, collapsed stacks,\n"
	  "speedscope JSON, Chrome/Node .cpuprofile and Chrome trace events,\n"
	  "gperftools CPU profiles, legacy text profiles (tcmalloc heap,\n"
	  "growth, contention, threadz, Go, Java), valgrind massif's\n"
	  "massif.out, heaptrack traces (.zst, .gz).  Output formats:\n",
	  "\n"
	  "  -o, --output FILE     where to write (- for standard output)\n"
	  "      --to FORMAT       output format (default: from OUT's extension)\n"
	  "      --sample-type T   for the text formats and firefox: which value\n"
	  "                        to write\n"
	  "      --event NAME      of a perf.data of several events, read only\n"
	  "                        NAME's samples (without it: a sample type\n"
	  "                        per event)\n"
	  "      --focus RE, --ignore RE, --hide RE   as for kiln top\n"
	  "      --transform LIST  as for kiln top\n"
	  "      --no-local-symbols  never open this machine's files to symbolize\n"
	  "                        the addresses a profile or trace names\n"
	  "      --no-times        pprof: leave out when samples were taken (the\n"
	  "                        \"time\" labels): one pprof sample per stack\n"
	  "                        and thread, a smaller file that go tool pprof\n"
	  "                        reads faster; no timeline from it\n"
	  "  -q, --quiet           no progress output\n"
	  "\n"
	  "Several inputs are merged into one profile.  An input is never\n"
	  "written over.\n"
	  "\n"
	  "firefox: the Firefox Profiler's processed format (version 70, which\n"
	  "profiler.firefox.com opens and upgrades): a track per thread with\n"
	  "its samples at their times, off-CPU states (--off-cpu, --wall) as\n"
	  "markers with the stack waited in, a heap trace's heap size as a\n"
	  "memory track; symbolized, no symbol server needed.\n"
	  "\n"
	  "Examples:\n"
	  "  kiln convert perf.data -o cpu.pb.gz\n"
	  "  perf script > out.perf && kiln convert out.perf -o cpu.pb.gz\n"
	  "  kiln convert --no-times out.perf -o small.pb.gz\n"
	  "  kiln convert wall.pb.gz -o wall.fxprof.json   # then load it in\n"
	  "                                # profiler.firefox.com\n" },
	{ "doctor", kiln_cmd_doctor, "check what decides whether profiles will be good here, and the fixes",
	  "usage: kiln doctor [--json] [BINARY]\n"
	  "       kiln doctor [--json] -p PID\n"
	  "       kiln doctor [--json] -- CMD [ARGS...]\n"
	  "\n"
	  "Answers \"why are my stacks broken?\" for this machine and, when\n"
	  "given one, a binary and the libraries it loads, or a process: each\n"
	  "check is one row with its status (ok, warn, problem, skip), what it\n"
	  "found and the fix.  Machine: kernel.perf_event_paranoid (with the\n"
	  "exact sysctl), whether perf_event_open opens here (refused: by the\n"
	  "sysctl, a seccomp filter, a container, a user namespace), kptr_restrict,\n"
	  "tracefs, hardware counters, Yama's ptrace_scope.  Each binary: frame\n"
	  "pointers (the share of sampled non-leaf functions whose prologue sets\n"
	  "up %rbp), .eh_frame/.debug_frame, DWARF or a symbol table or a\n"
	  "separate debug file found as kiln record finds it (kiln's debug file\n"
	  "cache, build ID, .gnu_debuglink), the build ID; the program's\n"
	  "allocator (glibc, jemalloc, tcmalloc, linked in) for heap profiling.\n"
	  "Process: JIT code and its /tmp/perf-PID.map.  With -- CMD the command\n"
	  "is run to its end (Ctrl-C stops it), its memory map read as it runs.\n"
	  "\n"
	  "  -p, --pid PID          a running process: its program, mapped\n"
	  "                         libraries, JIT code; perf_event_open on it\n"
	  "      --json             the rows as JSON: {problems, warnings, rows:\n"
	  "                         [{check, applies_to, subject, status,\n"
	  "                         finding, fix}]}\n"
	  "\n"
	  "Exit status: 0 when no check found a problem (warnings allowed), 1\n"
	  "when one did, 2 for a usage error (no such process, not an ELF file).\n"
	  "\n"
	  "Examples:\n"
	  "  kiln doctor ./server\n"
	  "  kiln doctor -p $(pidof node) --json\n" },
};

#define NCMDS (sizeof(kiln_cmds) / sizeof(kiln_cmds[0]))

static const struct kiln_cmd *find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < NCMDS; i++)
		if (!strcmp(kiln_cmds[i].name, name))
			return &kiln_cmds[i];
	return NULL;
}

static void main_usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: kiln <command> [options] [-- program args...]\n\n"
		   "commands:\n");
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  %-10s %s\n", kiln_cmds[i].name,
			kiln_cmds[i].summary);
	fprintf(f, "  %-10s %s\n", "help", "help on a command: kiln help top");
	fprintf(f, "\nkiln <command> --help shows a command's options; "
		   "man kiln-<command> the same\n(kiln help --man <command> "
		   "renders the page).  kiln --version: version and commit.\n");
}

int kiln_cli_usage_text(const char *cmd, struct kiln_buf *out)
{
	const struct kiln_cmd *c = find_cmd(cmd);

	if (!c)
		return -ENOENT;
	kiln_buf_adds(out, c->usage);
	if (c->usage_after_formats) {
		int err = kiln_fmt_list_help(out);

		if (err)
			return err;
		kiln_buf_adds(out, c->usage_after_formats);
	}
	return out->data ? 0 : -ENOMEM;
}

const char *kiln_cli_cmd_row(size_t i, const char **summary)
{
	if (i >= NCMDS)
		return NULL;
	if (summary)
		*summary = kiln_cmds[i].summary;
	return kiln_cmds[i].name;
}

void kiln_cli_usage(const char *cmd, bool to_stderr)
{
	struct kiln_buf b = KILN_BUF_INIT;
	FILE *f = to_stderr ? stderr : stdout;

	if (!find_cmd(cmd)) {
		main_usage(f);
		return;
	}
	if (!kiln_cli_usage_text(cmd, &b))
		fputs(b.data, f);
	kiln_buf_release(&b);
}

void kiln_cli_error(const char *fmt, ...)
{
	va_list ap;

	fputs("kiln: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int kiln_cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kiln %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(see 'kiln %s --help')\n", cmd);
	return KILN_EXIT_USAGE;
}

void kiln_cli_read_warning(const struct kiln_diag *d)
{
	/* Even with -q: it is about the data, not progress. */
	if (d->warn[0])
		fprintf(stderr, "kiln: warning: %s\n", d->warn);
}

int kiln_cli_write(const char *path, const void *data, unsigned long len,
		   char **inputs, int ninputs)
{
	int i, err;

	for (i = 0; i < ninputs; i++) {
		if (strcmp(path, "-") && (!strcmp(path, inputs[i]) ||
					  kiln_same_file(path, inputs[i]))) {
			kiln_cli_error("refusing to write over the input '%s': "
				       "choose another output name with -o",
				       inputs[i]);
			return KILN_EXIT_USAGE;
		}
	}
	err = kiln_write_atomic(path, data, len);
	if (err == -EINVAL) {
		kiln_cli_error("cannot write '%s': not a regular file, character "
			       "device or FIFO (choose a file name with -o)", path);
		return KILN_EXIT_USAGE;
	}
	if (err == -EISDIR) {
		kiln_cli_error("cannot write '%s': it is a folder (give a file "
			       "name with -o)", path);
		return KILN_EXIT_USAGE;
	}
	if (err == -ENXIO) {
		kiln_cli_error("cannot write '%s': nobody reads this FIFO "
			       "(start its reader first)", path);
		return KILN_EXIT_FAIL;
	}
	if (err) {
		kiln_cli_error("cannot write '%s': %s", path, strerror(-err));
		return KILN_EXIT_FAIL;
	}
	return KILN_EXIT_OK;
}

int main(int argc, char **argv)
{
	const struct kiln_cmd *c;
	const char *env;
	char *cache;

	kiln_session_register();
	if (argc < 2) {
		main_usage(stderr);
		return KILN_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h")) {
		/* kiln help --man|--complete ...: cli/help.c */
		if (argc > 2 && !strncmp(argv[2], "--", 2))
			return kiln_cli_help_extra(argc - 2, argv + 2);
		if (argc > 2 && !find_cmd(argv[2])) {
			kiln_cli_error("no command '%s' (see 'kiln help')", argv[2]);
			return KILN_EXIT_USAGE;
		}
		kiln_cli_usage(argc > 2 ? argv[2] : "", false);
		return KILN_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("kiln %s (commit %s)\n", KILN_VERSION, KILN_COMMIT);
		return KILN_EXIT_OK;
	}
	env = getenv("KILN_MAX_INPUT");
	if (env && *env) {
		size_t n;

		if (kiln_parse_size(env, &n) || !n) {
			kiln_cli_error("bad KILN_MAX_INPUT '%s': want a size in bytes, "
				       "with k, M, G or T for powers of 1024 (4G)", env);
			return KILN_EXIT_USAGE;
		}
		kiln_input_set_limit(n);
	}
	env = getenv("KILN_THREADS");
	if (env && *env) {
		char *end;
		unsigned long n;

		errno = 0;
		n = strtoul(env, &end, 10);
		if (errno || *end || !n || n > 1024 || *env == '-' || *env == '+') {
			kiln_cli_error("bad KILN_THREADS '%s': want a number of "
				       "threads from 1 to 1024", env);
			return KILN_EXIT_USAGE;
		}
		kiln_workers_set((size_t)n);
	}
	env = getenv("KILN_NO_LOCAL_SYMBOLS");
	if (env && *env && strcmp(env, "0"))
		kiln_sym_set_no_local(true);
	/* The decompressed debug file cache (docs/symbols.md): the CLI
	 * reads and adds to it; KILN_CACHE_DIR= (empty) turns it off. */
	cache = kiln_sym_debug_cache_env();
	if (cache && kiln_sym_set_debug_cache(cache, true)) {
		free(cache);
		kiln_cli_error("out of memory");
		return KILN_EXIT_FAIL;
	}
	free(cache);
	c = find_cmd(argv[1]);
	if (!c) {
		kiln_cli_error("no command '%s' (see 'kiln help')", argv[1]);
		return KILN_EXIT_USAGE;
	}
	return c->fn(argc - 1, argv + 1);
}
