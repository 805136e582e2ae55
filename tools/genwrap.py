#!/usr/bin/env python3
"""Generate libisthmus's MPI wrappers from src/layer/mpi_functions.txt.

Writes, into one folder of the output directory per folder of src/ whose code it is (so
that the build's include rule holds for generated code too):
  layer/functions.h, .c      the function table (enum, names, groups) the profiler uses;
  layer/wrappers_c.c         one C wrapper per function (MPI_X calls PMPI_X);
  layer/wrappers_fortran.c   one Fortran wrapper per function, exported under every
                             spelling (mpi_x_, mpi_x__, mpi_x, MPI_X, and Open MPI's
                             mpi_x_f08_), each calling the MPI's own Fortran pmpi_x_ entry
                             so that handles, sentinels and strings stay the MPI's business;
  coll/wan_calls.h          the WAN-aware form of each blocking collective;
  world/world_calls.h        ist_span_X, the calls src/world/zip carries across sites;
  world/own_calls.h, .c      ist_own_X: the site's MPI, waiting as the application's calls
                             do (the sleeping forms below), for the wrappers and for the
                             layer's own calls.

Each wrapper has the same shape: when profiling is off, or when it is entered from inside
another wrapper (MPICH's Fortran entries call the C MPI_X), it only forwards; otherwise
it times the call and hands the arguments named in the list to a recording helper.

With several sites (src/world/zip), a wrapper offers the call to src/world (timed and
recorded like any other call): the functions in ZIP_CALLS have a form ist_span_X there
(declared in the generated world_calls.h) that serves calls on communicators spanning
sites; any other function with
a communicator argument ends the run with a message naming it when that communicator spans
sites, rather than let the native MPI answer for one site alone.

A blocking collective first tries its WAN-aware form (src/coll, declared in the generated
wan_calls.h), which may decline; with several sites, then src/world's on a communicator
spanning them.
A blocking C function also gets a sleeping form for oversubscribed runs (src/world/wait.c):
when its nonblocking twin MPI_IX takes the same arguments plus a request (or a request
in place of the status), the form starts MPI_IX and waits by testing and sleeping; the
functions in HAND_SLEEP have hand-written forms (src/world/wait.c). ist_own_X selects
them at run time (ist_sleep_wait).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# Functions that layer.c writes by hand but that still get a slot in the function table.
HAND_WRITTEN = [("init", "MPI_Init"), ("init", "MPI_Init_thread"), ("init", "MPI_Finalize")]

# What src/world does with each call comes from the list's world column (parse_list):
# ZIP_CALLS the calls it carries across sites; HAND_SLEEP the blocking ones whose sleeping
# form src/world/wait.c writes by hand; BARRIER_FIRST the communicator constructors with
# no nonblocking form, collective over the communicator named: in sleep mode a sleeping
# barrier over it first, so that every rank enters the blocking call together and none
# waits inside the MPI (whose own waits spin: MPICH's busily, Open MPI's with
# sched_yield). Intercommunicators are left out (a nonblocking collective on one is no
# drop-in: gen_sleep_form says why).
ZIP_CALLS: set[str] = set()
HAND_SLEEP: set[str] = set()
BARRIER_FIRST: dict[str, str] = {}
# MPI-IO on pio (docs/mpiio.md): PIO_CALLS the calls src/layer/mpiio_*.c serve for a file
# pio holds (ist_pio_X, same arguments); PIO_REFUSED the ones it refuses on such a file,
# with one line. Every other call on such a file reaches the MPI's own handle behind it
# (its error handler, c2f), which is right for it.
PIO_CALLS: set[str] = set()
PIO_REFUSED: set[str] = set()
# Unprofiled calls the site's MPI serves even on a communicator spanning sites.
ANY_SITE: set[str] = set()

# How a Fortran wrapper turns a by-reference argument into the C value a recorder takes.
F2C_HANDLE = {
    "MPI_Comm": "PMPI_Comm_f2c",
    "MPI_Datatype": "PMPI_Type_f2c",
    "MPI_Win": "PMPI_Win_f2c",
    "MPI_File": "PMPI_File_f2c",
}


@dataclass(frozen=True)
class Param:
    ctype: str  # the C declaration without the name, e.g. "const int" or "MPI_Status *"
    name: str
    array: bool  # declared as name[] (or name[][3]: dims)
    dims: str = "[]"

    def c_decl(self) -> str:
        if self.ctype.endswith("*"):
            return f"{self.ctype}{self.name}"
        return f"{self.ctype} {self.name}{self.dims if self.array else ''}"

    @property
    def base(self) -> str:
        return self.ctype.replace("const", "").replace("*", "").strip()

    @property
    def string(self) -> bool:
        """A character string: in Fortran, a hidden length follows the arguments."""
        return self.base == "char"


@dataclass(frozen=True)
class Function:
    group: str
    name: str
    params: list[Param]
    recorder: str  # helper name without the ist_rec_ prefix, or "none"
    record_args: list[str]

    @property
    def enum(self) -> str:
        return f"IST_FN_{self.name}"

    def arg_names(self) -> str:
        return ", ".join(p.name for p in self.params)


def parse_param(text: str, where: str) -> Param:
    m = re.fullmatch(r"(.*?)([A-Za-z_]\w*)\s*(\[\](?:\[\d+\])*)?", text.strip())
    if not m:
        sys.exit(f"{where}: cannot parse parameter '{text}'")
    ctype = " ".join(m.group(1).split())
    dims = m.group(3) or ""
    return Param(ctype=ctype, name=m.group(2), array=bool(dims), dims=dims or "[]")


def parse_list(path: Path) -> list[Function]:
    functions = []
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{path}:{lineno}"
        try:
            group, record, world, proto = (part.strip() for part in line.split("|"))
        except ValueError:
            sys.exit(f"{where}: expected 'group | record | world | prototype'")
        m = re.fullmatch(r"int\s+(MPI_\w+)\s*\((.*)\)", proto)
        if not m:
            sys.exit(f"{where}: expected an 'int MPI_X(...)' prototype")
        for mark in [] if world == "-" else [w.strip() for w in world.split(",")]:
            first = re.fullmatch(r"barrier-first\((\w+)\)", mark)
            if mark == "span":
                ZIP_CALLS.add(m.group(1))
            elif mark == "sleep-hand":
                HAND_SLEEP.add(m.group(1))
            elif first:
                BARRIER_FIRST[m.group(1)] = first.group(1)
            elif mark == "pio":
                PIO_CALLS.add(m.group(1))
            elif mark == "pio-refuse":
                PIO_REFUSED.add(m.group(1))
            elif mark == "any-site":
                ANY_SITE.add(m.group(1))
            else:
                sys.exit(
                    f"{where}: world '{mark}': expected span, sleep-hand, barrier-first(comm), "
                    "pio, pio-refuse, any-site"
                )
        params = [parse_param(p, where) for p in m.group(2).split(",")]
        if record == "-":
            recorder, args = "none", []
        else:
            r = re.fullmatch(r"(\w+)\((.*)\)", record)
            if not r:
                sys.exit(f"{where}: expected 'helper(arg, ...)' or '-' as record")
            recorder, args = r.group(1), [a.strip() for a in r.group(2).split(",")]
            names = {p.name for p in params}
            for a in args:
                if old_value(a) not in names:
                    sys.exit(f"{where}: record argument '{a}' is not a parameter")
        functions.append(Function(group, m.group(1), params, recorder, args))
    return functions


def old_value(arg: str) -> str:
    """The parameter a record argument names: x for old(x), the value *x had before the
    call (MPI_File_close sets the handle it closes to MPI_FILE_NULL)."""
    m = re.fullmatch(r"old\((\w+)\)", arg)
    return m.group(1) if m else arg


def record_arg(arg: str) -> str:
    """The C expression a recorder gets for a record argument (old(x): ist_old_x)."""
    return f"ist_old_{old_value(arg)}" if arg != old_value(arg) else arg


def keep_old_values(f: Function, fortran: bool = False) -> str:
    """Before the call: the values old(x) names, in C (from the Fortran handle: fortran)."""
    out = ""
    for a in f.record_args:
        if a == old_value(a):
            continue
        p = next(p for p in f.params if p.name == old_value(a))
        value = f"{F2C_HANDLE[p.base]}(*{p.name}_f)" if fortran else f"*{p.name}"
        out += f"    const {p.base} {record_arg(a)} = {value};\n"
    return out


def record_call(f: Function, pc: str = "__builtin_return_address(0)") -> str:
    """The recorders after a call; a blocking collective also records its call site, pc
    (the caller's return address), and then what its WAN-aware algorithm sent."""
    args = "".join(f", {record_arg(a)}" for a in f.record_args)
    wan = ""
    if f.group == "coll":
        wan = f" ist_rec_site({f.enum}, {pc}, ist_dt); ist_rec_wan({f.enum});"
    return f"ist_rec_{f.recorder}({f.enum}, ist_dt{args});{wan}"


def uses_status(f: Function) -> bool:
    return "status" in f.record_args


def gen_functions_h(functions: list[Function]) -> str:
    names = [n for _, n in HAND_WRITTEN] + [f.name for f in functions]
    enum = "\n".join(f"    IST_FN_{n}," for n in names)
    return f"""/* Generated by tools/genwrap.py from src/layer/mpi_functions.txt: do not edit. */
#ifndef ISTHMUS_FUNCTIONS_H
#define ISTHMUS_FUNCTIONS_H

enum ist_fn {{
{enum}
    IST_FN_COUNT
}};

/* Name ("MPI_Send") and group ("p2p", "coll", ...) of each function, by enum value. */
extern const char *const ist_fn_name[IST_FN_COUNT];
extern const char *const ist_fn_group[IST_FN_COUNT];

#endif
"""


def gen_functions_c(functions: list[Function]) -> str:
    rows = [(g, n) for g, n in HAND_WRITTEN] + [(f.group, f.name) for f in functions]
    names = "\n".join(f'    "{n}",' for _, n in rows)
    groups = "\n".join(f'    "{g}",' for g, _ in rows)
    return f"""/* Generated by tools/genwrap.py from src/layer/mpi_functions.txt: do not edit. */
#include "functions.h"

const char *const ist_fn_name[IST_FN_COUNT] = {{
{names}
}};

const char *const ist_fn_group[IST_FN_COUNT] = {{
{groups}
}};
"""


def nonblocking_twin(f: Function, by_name: dict[str, Function]) -> Function | None:
    """MPI_IX when it takes f's arguments plus a request, or a request instead of f's status."""
    twin = by_name.get("MPI_I" + f.name[4].lower() + f.name[5:])
    if twin is None or twin.params[-1].base != "MPI_Request":
        return None
    same = [(p.ctype, p.name) for p in twin.params[:-1]]
    if same == [(p.ctype, p.name) for p in f.params]:
        return twin
    if f.params[-1].base == "MPI_Status" and same == [(p.ctype, p.name) for p in f.params[:-1]]:
        return twin
    return None


def gen_sleep_form(f: Function, twin: Function) -> str:
    decl = ", ".join(p.c_decl() for p in f.params)
    args = ", ".join(p.name for p in twin.params[:-1])
    status = "status" if f.params[-1].base == "MPI_Status" else "MPI_STATUS_IGNORE"
    inter = ""
    if f.group == "coll":
        # On an intercommunicator a nonblocking collective is no drop-in for the blocking
        # one: Open MPI's MPI_Ibcast returns at once for count 0, which a rank passing
        # MPI_PROC_NULL may give while its peers count the call, and the sequence numbers
        # of later calls no longer match (mpi4py's object broadcasts hung; issue 26).
        inter = f"""    int ist_inter = 0;
    PMPI_Comm_test_inter(comm, &ist_inter);
    if (ist_inter) return PMPI_{f.name[4:]}({f.arg_names()});
"""
    return f"""
int ist_sleepwait_{f.name[4:]}({decl})
{{
{inter}    MPI_Request ist_req;
    const int ist_rc = PMPI_{twin.name[4:]}({args}, &ist_req);
    if (ist_rc != MPI_SUCCESS) return ist_rc;
    return ist_sleep_until_done(&ist_req, {status});
}}
"""


def gen_barrier_first_form(f: Function) -> str:
    decl = ", ".join(p.c_decl() for p in f.params)
    return f"""
int ist_sleepwait_{f.name[4:]}({decl})
{{
    const int ist_rc = ist_sleeping_barrier({BARRIER_FIRST[f.name]});
    return ist_rc != MPI_SUCCESS ? ist_rc : PMPI_{f.name[4:]}({f.arg_names()});
}}
"""


def has_sleep_form(f: Function, by_name: dict[str, Function]) -> bool:
    return (
        nonblocking_twin(f, by_name) is not None or f.name in HAND_SLEEP or f.name in BARRIER_FIRST
    )


def gen_sleep_forms(f: Function, by_name: dict[str, Function]) -> str:
    twin = nonblocking_twin(f, by_name)
    if twin is not None:
        return gen_sleep_form(f, twin)
    if f.name in BARRIER_FIRST:
        return gen_barrier_first_form(f)
    return ""  # HAND_SLEEP: src/world/wait.c


def gen_c_wrapper(f: Function, by_name: dict[str, Function]) -> str:
    decl = ", ".join(p.c_decl() for p in f.params)
    call = f"PMPI_{f.name[4:]}({f.arg_names()})"
    if has_sleep_form(f, by_name):
        call = f"ist_own_{f.name[4:]}({f.arg_names()})"
    hier = ""
    zip_ = ""
    sites = ""  # with several sites: the call that carries it (timed like the other)
    if f.group == "coll":
        # WAN-aware collectives (src/coll): the hierarchical algorithm, unless it declines.
        # With several sites, then src/world's for a spanning communicator (timed too).
        hier = f"""
static inline int ist_coll_{f.name[4:]}({decl})
{{
    int ist_h;
    if (ist_hier_enabled && ist_wan_{f.name[4:]}({f.arg_names()}, &ist_h))
        return ist_adapt_after(ist_h);
    return ist_adapt_after({call});
}}
"""
        if f.name in ZIP_CALLS:
            hier += f"""
static int ist_sites_{f.name[4:]}({decl})
{{
    int ist_h;
    if (ist_hier_enabled && ist_wan_{f.name[4:]}({f.arg_names()}, &ist_h)) return ist_h;
    int ist_zrc;
    if (ist_span_{f.name[4:]}({f.arg_names()}, &ist_zrc)) return ist_zrc;
    return {call};
}}
"""
            sites = f"ist_sites_{f.name[4:]}({f.arg_names()})"
        call = f"ist_coll_{f.name[4:]}({f.arg_names()})"
    comms = [p.name for p in f.params if p.base == "MPI_Comm" and "*" not in p.ctype]
    if f.name in ZIP_CALLS and f.group != "coll":
        hier += f"""
static int ist_sites_{f.name[4:]}({decl})
{{
    int ist_zrc;
    if (ist_span_{f.name[4:]}({f.arg_names()}, &ist_zrc)) return ist_zrc;
    return {call};
}}
"""
        sites = f"ist_sites_{f.name[4:]}({f.arg_names()})"
    elif f.name not in ZIP_CALLS and comms:
        zip_ = (
            f"    if (__builtin_expect(ist_multi_site, 0)) "
            f'ist_world_native_only({comms[0]}, "{f.name}");\n'
        )
    call = pio_dispatch(f, call)
    status = ""
    if uses_status(f):
        status = (
            "    MPI_Status ist_status;\n"
            "    if (status == MPI_STATUS_IGNORE) status = &ist_status;\n"
        )
    if sites:  # one load of ist_multi_site, as before, on either path
        call = f"(__builtin_expect(ist_multi_site, 0) ? {sites} : {call})"
    return f"""{hier}
int {f.name}({decl})
{{
{app_world(f)}{zip_}    if (IST_PASS_THROUGH()) return {call};
{status}{keep_old_values(f)}    ist_depth++;
    const uint64_t ist_t0 = ist_ticks();
    const int ist_rc = {call};
    const uint64_t ist_dt = ist_ticks() - ist_t0;
    {record_call(f)}
    ist_depth--;
    return ist_rc;
}}
"""


def app_world(f: Function) -> str:
    """Statements that give the application's MPI_COMM_WORLD the layer's meaning of it
    (without I/O servers hidden in the job, MPI_COMM_WORLD itself: docs/mpiio.md)."""
    comms = [p.name for p in f.params if p.base == "MPI_Comm" and "*" not in p.ctype]
    return "".join(f"    {c} = IST_APP_COMM({c});\n" for c in comms)


def pio_dispatch(f: Function, call: str) -> str:
    """The call as it goes for a file pio holds (PIO_CALLS, PIO_REFUSED), else `call`."""
    if f.name not in PIO_CALLS | PIO_REFUSED:
        return call
    by_name = {p.name: p for p in f.params}
    if "filename" in by_name:  # open and delete: the name says (open's fh is its output)
        which = "ist_pio_name(filename)"
    elif "fh" in by_name:
        which = "ist_pio_handle(*fh)" if "*" in by_name["fh"].ctype else "ist_pio_handle(fh)"
    else:
        sys.exit(f"{f.name}: a pio call needs an 'fh' or 'filename' parameter")
    if f.name in PIO_REFUSED:
        fh = "*fh" if "*" in by_name["fh"].ctype else "fh"
        return f'(__builtin_expect({which}, 0) ? ist_pio_refuse({fh}, "{f.name}") : {call})'
    return f"(__builtin_expect({which}, 0) ? ist_pio_{f.name[4:]}({f.arg_names()}) : {call})"


def declarations(functions: list[Function], prefix: str, chosen: set[str], extra: str = "") -> str:
    """`int <prefix>X(<MPI_X's parameters><extra>);` for every chosen MPI_X."""
    return "\n".join(
        f"int {prefix}{f.name[4:]}({', '.join(p.c_decl() for p in f.params)}{extra});"
        for f in functions
        if f.name in chosen
    )


def gen_pio_calls_h(functions: list[Function]) -> str:
    decls = declarations(functions, "ist_pio_", PIO_CALLS)
    return f"""/* Generated by tools/genwrap.py from src/layer/mpi_functions.txt: do not edit. */
/* The MPI-IO calls src/layer/mpiio_*.c serve for a file pio holds (docs/mpiio.md). */
#ifndef ISTHMUS_PIO_CALLS_H
#define ISTHMUS_PIO_CALLS_H

#include <mpi.h>

{decls}

#endif
"""


def fortran_conversion(p: Param) -> str | None:
    """C statement defining p.name from the Fortran argument p.name_f, or None."""
    if p.base == "int" and not p.array and "*" not in p.ctype:
        return f"const int {p.name} = (int)*{p.name}_f;"
    if p.base == "int" and p.array:
        return f"const int *{p.name} = (const int *){p.name}_f;"
    if p.base in F2C_HANDLE and not p.array and "*" not in p.ctype:
        return f"const {p.base} {p.name} = {F2C_HANDLE[p.base]}(*{p.name}_f);"
    if p.base in F2C_HANDLE and not p.array:  # a handle the call returned
        return (
            f"{p.base} ist_c_{p.name} = {F2C_HANDLE[p.base]}(*{p.name}_f); "
            f"{p.base} *{p.name} = &ist_c_{p.name};"
        )
    if p.string:  # blank-padded, not terminated: up to its hidden length
        return (
            f"char ist_s_{p.name}[4096]; const char *{p.name} = ist_fstring({p.name}_f, "
            f"{p.name}_len, ist_s_{p.name}, sizeof ist_s_{p.name});"
        )
    if p.base == "MPI_Status" and "*" in p.ctype:
        return (
            f"MPI_Status ist_cstatus; PMPI_Status_f2c({p.name}_use, &ist_cstatus); "
            f"MPI_Status *{p.name} = &ist_cstatus;"
        )
    return None


def fortran_to_c(p: Param) -> str | None:
    """The C argument expression for p in a WAN-aware collective called from Fortran, or
    None when it needs a converted array (datatype arrays: ist_ftypes)."""
    if "void" in p.ctype:
        return f"ist_f2c_buffer({p.name}_f)"
    if p.base == "int":
        return f"(const int *){p.name}_f" if p.array else f"(int)*{p.name}_f"
    if p.base == "MPI_Op":
        return f"PMPI_Op_f2c(*{p.name}_f)"
    if p.base in F2C_HANDLE and not p.array:
        return f"{F2C_HANDLE[p.base]}(*{p.name}_f)"
    return None


def gen_fortran_wan(f: Function) -> str:
    """Open MPI's Fortran collectives call PMPI_X, past the C wrapper: under Open MPI the
    Fortran wrapper itself converts the arguments and tries the WAN-aware form (MPICH's
    reach the C MPI_X, where the C wrapper does, except mpi_f08 ones without a buffer)."""
    fdecl = ", ".join(
        [*(("void *" if "void" in p.ctype else "MPI_Fint *") + f"{p.name}_f" for p in f.params)]
    )
    setup, args, cleanup = [], [], []
    for p in f.params:
        expr = fortran_to_c(p)
        if expr is None:  # an array of datatypes, one per rank of the communicator
            setup.append(f"MPI_Datatype *{p.name} = ist_ftypes({p.name}_f, comm_f);")
            setup.append(f"if (!{p.name}) return 0;")
            cleanup.append(f"free({p.name});")
            expr = p.name
        args.append(expr)
    body = "\n    ".join(setup)
    after = " ".join(cleanup)
    # Without a choice buffer (Barrier) MPICH's mpi_f08 entry calls PMPI_X too, and no
    # Fortran sentinel is involved: converted for every MPI.
    guard = "#ifdef OPEN_MPI" if any("void" in p.ctype for p in f.params) else "#if 1"
    return f"""
static inline int ist_fwan_{f.name}({fdecl}, MPI_Fint *ierr)
{{
{guard}
    if (!ist_hier_enabled) return 0;
    {body}
    int ist_h;
    const int ist_served = ist_wan_{f.name[4:]}({", ".join(args)}, &ist_h);
    {after}
    if (!ist_served) {{
        ist_adapt_pending = NULL; /* the MPI's own Fortran entry runs: not timed */
        return 0;
    }}
    *ierr = (MPI_Fint)ist_adapt_after(ist_h);
    return 1;
#else
    (void)ierr;
    {" ".join(f"(void){p.name}_f;" for p in f.params)}
    return 0;
#endif
}}
"""


F2C_ANY = {
    "MPI_Comm": "Comm",
    "MPI_Datatype": "Type",
    "MPI_Op": "Op",
    "MPI_Group": "Group",
    "MPI_Info": "Info",
    "MPI_Win": "Win",
    "MPI_Request": "Request",
    "MPI_Message": "Message",
}


def fortran_zip_argument(f: Function, p: Param) -> tuple[list[str], str, list[str]] | None:
    """(setup, C argument, after) for p when a Fortran call is handed to the C wrapper
    under zipper forwarding, or None when p cannot be converted."""
    n = f"{p.name}_f"
    length = next((q.name for q in f.params if q.name in ("count", "incount")), None)
    if "void" in p.ctype:
        return [], f"ist_f2c_buffer({n})", []
    if p.base == "int" and p.array:
        after = []
        if p.name == "array_of_indices":  # Fortran counts from 1
            after = [
                f"if (*outcount_f != MPI_UNDEFINED) for (int i = 0; i < *outcount_f; i++) {n}[i]++;"
            ]
        return [], f"({'const ' if 'const' in p.ctype else ''}int *){n}", after
    if p.base == "int" and "*" in p.ctype:
        after = [f"if (*{n} >= 0) (*{n})++;"] if p.name == "index" else []
        return [], f"(int *){n}", after
    if p.base == "int":
        return [], f"(int)*{n}", []
    if p.base == "MPI_Aint":
        return [], f"*(MPI_Aint *){n}", []
    if p.base == "MPI_Status" and p.array:
        count = "*outcount_f" if f.name in ("MPI_Waitsome", "MPI_Testsome") else f"*{length}_f"
        return (
            [
                f"MPI_Status *{p.name} = {n} == MPI_F_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : "
                f"malloc(sizeof(MPI_Status) * (size_t)(*{length}_f > 0 ? *{length}_f : 1));"
            ],
            p.name,
            [
                f"if ({p.name} != MPI_STATUSES_IGNORE) {{ if ({count} != MPI_UNDEFINED) "
                f"for (int i = 0; i < {count}; i++) PMPI_Status_c2f(&{p.name}[i], {n} + i * "
                f"IST_F_STATUS_SIZE); free({p.name}); }}"
            ],
        )
    if p.base == "MPI_Status":
        return (
            [
                f"MPI_Status {p.name}_c, *{p.name} = {n} == MPI_F_STATUS_IGNORE ? "
                f"MPI_STATUS_IGNORE : &{p.name}_c;"
            ],
            p.name,
            [f"if ({p.name} != MPI_STATUS_IGNORE) PMPI_Status_c2f({p.name}, {n});"],
        )
    if p.base == "MPI_Datatype" and p.array:
        return (
            [f"MPI_Datatype *{p.name} = ist_ftypes({n}, comm_f);", f"if (!{p.name}) return 0;"],
            p.name,
            [f"free({p.name});"],
        )
    if p.base not in F2C_ANY:
        return None
    kind = F2C_ANY[p.base]
    if p.array:  # requests, as many as count says
        return (
            [
                f"{p.base} *{p.name} = malloc(sizeof({p.base}) * (size_t)(*{length}_f > 0 ? "
                f"*{length}_f : 1));",
                f"for (int i = 0; i < *{length}_f; i++) {p.name}[i] = PMPI_{kind}_f2c({n}[i]);",
            ],
            p.name,
            [
                f"for (int i = 0; i < *{length}_f; i++) {n}[i] = PMPI_{kind}_c2f({p.name}[i]);",
                f"free({p.name});",
            ],
        )
    if "*" in p.ctype:
        return (
            [f"{p.base} {p.name} = PMPI_{kind}_f2c(*{n});"],
            f"&{p.name}",
            [f"*{n} = PMPI_{kind}_c2f({p.name});"],
        )
    return [], f"PMPI_{kind}_f2c(*{n})", []


def fortran_type(p: Param) -> str:
    return "void *" if "void" in p.ctype else "char *" if p.string else "MPI_Fint *"


def fortran_lengths(f: Function) -> list[str]:
    """The hidden lengths of a Fortran call's strings, after its ierr (gfortran: size_t)."""
    return [f"{p.name}_len" for p in f.params if p.string]


def gen_fortran_zip(f: Function) -> str:
    """Under zipper forwarding a Fortran call goes to the C wrapper, which carries it across
    forwarders or passes it to the MPI: Open MPI's Fortran entries would call PMPI_X, past
    the layer (MPICH's reach the C MPI_X by themselves)."""
    fdecl = ", ".join(fortran_type(p) + f"{p.name}_f" for p in f.params)
    lengths = "".join(f", size_t {n}" for n in fortran_lengths(f))
    parts = [fortran_zip_argument(f, p) for p in f.params]
    if all(x is not None for x in parts):
        setup = [line for x in parts if x for line in x[0]]
        after = [line for x in parts if x for line in x[2]]
        args = ", ".join(x[1] for x in parts if x)
        body = "\n    ".join([*setup, f"*ierr = (MPI_Fint){f.name}({args});", *after, "return 1;"])
    names = [*(f"{p.name}_f" for p in f.params), *fortran_lengths(f)]
    unused = " ".join(f"(void){n};" for n in names)
    if any(x is None for x in parts):
        body = f"(void)ierr; {unused}\n    return 0;"
    return f"""
static inline int ist_fzip_{f.name}({fdecl}, MPI_Fint *ierr{lengths})
{{
#ifdef OPEN_MPI
    {body}
#else
    (void)ierr;
    {unused}
    return 0;
#endif
}}
"""


def gen_fortran_wrapper(f: Function) -> str:
    lower = f.name.lower()
    lengths = fortran_lengths(f)
    fparams = [fortran_type(p) + f"{p.name}_f" for p in f.params]
    fdecl = ", ".join([*fparams, "MPI_Fint *ierr", *(f"size_t {n}" for n in lengths)])
    ftypes = ", ".join(fortran_type(p) for p in f.params)
    hidden = "".join(", size_t" for _ in lengths)
    pass_args = ", ".join([*(f"{p.name}_f" for p in f.params), "ierr", *lengths])

    by_name = {p.name: p for p in f.params}
    conversions = [fortran_conversion(by_name[a]) for a in f.record_args if a == old_value(a)]
    record_args = f.record_args
    recorder = f.recorder
    if any(c is None for c in conversions):
        # An argument this wrapper cannot convert (arrays of handles): calls and time only.
        conversions, record_args, recorder = [], [], "none"
    status_setup = ""
    timed_args = pass_args
    if "status" in record_args:
        status_setup = (
            "    MPI_Fint ist_fstatus[IST_F_STATUS_MAX];\n"
            "    MPI_Fint *status_use = status_f == MPI_F_STATUS_IGNORE ? ist_fstatus : status_f;\n"
        )
        timed_args = ", ".join(
            [
                *("status_use" if p.name == "status" else f"{p.name}_f" for p in f.params),
                "ierr",
                *lengths,
            ]
        )
    rec_args = "".join(f", {record_arg(a)}" for a in record_args)
    if record_args:
        status_setup += keep_old_values(f, fortran=True)
    convert = " ".join(c for c in conversions if c)
    body_name = f"ist_fbody_{f.name}"
    wan = ""
    if f.group == "coll":
        wan = f" ist_rec_site({f.enum}, ist_pc, ist_dt); ist_rec_wan({f.enum});"
    # The exported entries pass their caller's return address (pc) to the shared body.
    pc = "__builtin_return_address(0)"
    # MPICH's mpi_f08 routines without a choice buffer call PMPI_X directly (those with one
    # reach the C MPI_X); their profiling twins are named pmpir_x_f08_.
    mpich_f08 = ""
    if not any("void" in p.ctype for p in f.params):
        mpich_f08 = (
            f"#ifdef IST_MPICH_F08\n"
            f"extern void pmpir{lower[3:]}_f08_({ftypes}, MPI_Fint *{hidden});\n"
            f"void {lower}_f08_({fdecl})\n"
            f"{{ {body_name}(pmpir{lower[3:]}_f08_, {pc}, {pass_args}); }}\n"
            f"#endif\n"
        )
    aliases = "\n".join(
        f'void {alias}({fdecl}) __attribute__((alias("{lower}_")));'
        for alias in (lower, f"{lower}__", f.name.upper())
    )
    hier, call = "", f"pmpi({pass_args});"
    if f.group == "coll":
        hier = gen_fortran_wan(f)
        call = f"if (!ist_fwan_{f.name}({pass_args})) pmpi({pass_args});"
    timed_call = call.replace(f"pmpi({pass_args})", f"pmpi({timed_args})")
    zip_ = gen_fortran_zip(f)
    return f"""{hier}{zip_}
typedef void (*ist_ftype_{f.name})({ftypes}, MPI_Fint *{hidden});
extern void p{lower}_({ftypes}, MPI_Fint *{hidden});
static inline void {body_name}(ist_ftype_{f.name} pmpi, const void *ist_pc, {fdecl})
{{
    (void)ist_pc;
    if (__builtin_expect(ist_multi_site, 0) && ist_fzip_{f.name}({pass_args})) return;
    if (IST_PASS_THROUGH()) {{ {call} return; }}
{status_setup}    ist_depth++;
    const uint64_t ist_t0 = ist_ticks();
    {timed_call}
    const uint64_t ist_dt = ist_ticks() - ist_t0;
    {{ {convert} ist_rec_{recorder}({f.enum}, ist_dt{rec_args});{wan} }}
    ist_depth--;
}}
void {lower}_({fdecl}) {{ {body_name}(p{lower}_, {pc}, {pass_args}); }}
{aliases}
#ifdef IST_FORTRAN_F08
extern void p{lower}_f08_({ftypes}, MPI_Fint *{hidden});
void {lower}_f08_({fdecl}) {{ {body_name}(p{lower}_f08_, {pc}, {pass_args}); }}
#endif
{mpich_f08}"""


PREAMBLE = """/* Generated by tools/genwrap.py from src/layer/mpi_functions.txt: do not edit. */
#include <stdint.h>
#include <mpi.h>
#include "layer.h"
#include "hier.h"
#include "wan_calls.h"
#include "topology.h"
#include "world.h"
#include "world_calls.h"
#include "mpiio.h"
#include "pio_calls.h"
"""


FORTRAN_PREAMBLE = """#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A Fortran string (blank-padded, len characters) in C, for a recorder: trailing blanks
 * dropped, cut to fit `size`. */
static inline const char *ist_fstring(const char *s, size_t len, char *out, size_t size)
{
    while (len > 0 && s[len - 1] == ' ') len--;
    if (len >= size) len = size - 1;
    memcpy(out, s, len);
    out[len] = '\\0';
    return out;
}

#ifdef OPEN_MPI
/* A Fortran status, in integers (Open MPI's mpi.h has no MPI_F_STATUS_SIZE). */
#define IST_F_STATUS_SIZE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
/* Open MPI's Fortran sentinels (common blocks): MPI_IN_PLACE and MPI_BOTTOM. */
extern int mpi_fortran_in_place_, mpi_fortran_bottom_;

static inline void *ist_f2c_buffer(void *p)
{
    if (p == (void *)&mpi_fortran_in_place_) return MPI_IN_PLACE;
    if (p == (void *)&mpi_fortran_bottom_) return MPI_BOTTOM;
    return p;
}

/* A Fortran array of datatypes, one per rank of an intracommunicator, in C (malloc'd),
 * or NULL for an intercommunicator (those stay native). */
static inline MPI_Datatype *ist_ftypes(const MPI_Fint *types, const MPI_Fint *comm_f)
{
    MPI_Comm comm = PMPI_Comm_f2c(*comm_f);
    int inter = 0, n = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) return NULL;
    PMPI_Comm_size(comm, &n);
    MPI_Datatype *out = malloc((size_t)(n > 0 ? n : 1) * sizeof *out);
    for (int i = 0; i < n; i++) out[i] = PMPI_Type_f2c(types[i]);
    return out;
}
#endif
"""


def gen_wan_calls_h(functions: list[Function]) -> str:
    coll = {f.name for f in functions if f.group == "coll"}
    decls = declarations(functions, "ist_wan_", coll, ", int *answer")
    return f"""/* Generated by tools/genwrap.py from src/layer/mpi_functions.txt: do not edit. */
/* The WAN-aware form of every blocking collective (src/coll/<collective>/): 1 when it
 * served the call (its result in *answer), 0 when the native collective should run. */
#ifndef ISTHMUS_WAN_CALLS_H
#define ISTHMUS_WAN_CALLS_H

#include <mpi.h>

{decls}

#endif
"""


def gen_world_call(f: Function) -> str:
    """ist_world_X of an unprofiled function: src/world/zip's answer for a communicator (or
    group) spanning sites, else the site's MPI; without a span form, a spanning
    communicator ends the run."""
    decl = ", ".join(p.c_decl() for p in f.params)
    site = f"PMPI_{f.name[4:]}({f.arg_names()})"
    comms = [p.name for p in f.params if p.base == "MPI_Comm" and "*" not in p.ctype]
    if f.name in ZIP_CALLS:
        sites = (
            "    int ist_zrc;\n"
            f"    if (__builtin_expect(ist_multi_site, 0) && ist_span_{f.name[4:]}("
            f"{f.arg_names()}, &ist_zrc))\n        return ist_zrc;\n"
        )
    elif f.name in ANY_SITE:
        sites = ""
    elif comms:
        sites = (
            f"    if (__builtin_expect(ist_multi_site, 0)) "
            f'ist_world_native_only({comms[0]}, "{f.name}");\n'
        )
    else:
        sys.exit(f"{f.name}: an unprofiled function needs 'span' or a communicator argument")
    return f"static inline int ist_world_{f.name[4:]}({decl})\n{{\n{sites}    return {site};\n}}\n"


def gen_world_calls_h(functions: list[Function]) -> str:
    decls = declarations(functions, "ist_span_", ZIP_CALLS, ", int *answer")
    routed = "\n".join(gen_world_call(f) for f in functions if f.group == "-")
    return f"""/* Generated by tools/genwrap.py from src/layer/mpi_functions.txt: do not edit. */
/* The calls src/world/zip carries across forwarders: 1 when served (result in *answer), 0
 * when the communicator lies in one site and the site's MPI should serve it. */
#ifndef ISTHMUS_WORLD_CALLS_H
#define ISTHMUS_WORLD_CALLS_H

#include <mpi.h>

extern int ist_multi_site;
void ist_world_native_only(MPI_Comm comm, const char *call);

{decls}

/* The unprofiled calls (group '-' in the list): MPI_X is ist_world_X, and src/world calls
 * ist_world_X itself where it needs one. */
{routed}
#endif
"""


def gen_routed_wrapper(f: Function) -> str:
    decl = ", ".join(p.c_decl() for p in f.params)
    call = pio_dispatch(f, f"ist_world_{f.name[4:]}({f.arg_names()})")
    return f"\nint {f.name}({decl})\n{{\n{app_world(f)}    return {call};\n}}\n"


def gen_own_calls_h(functions: list[Function], by_name: dict[str, Function]) -> str:
    parts = []
    for f in functions:
        if not has_sleep_form(f, by_name):
            continue
        decl = ", ".join(p.c_decl() for p in f.params)
        parts.append(
            f"int ist_sleepwait_{f.name[4:]}({decl});\n"
            f"static inline int ist_own_{f.name[4:]}({decl})\n"
            f"{{\n    if (__builtin_expect(ist_sleep_wait, 0)) {{\n"
            f"        const int ist_rc = ist_sleepwait_{f.name[4:]}({f.arg_names()});\n"
            f"        IST_KEEP_CALLER();\n"
            f"        return ist_rc;\n    }}\n"
            f"    return PMPI_{f.name[4:]}({f.arg_names()});\n}}\n"
        )
    body = "\n".join(parts)
    return f"""/* Generated by tools/genwrap.py from src/layer/mpi_functions.txt: do not edit. */
/* ist_own_X: MPI_X by the site's MPI, waiting as the application's calls do (sleeping in
 * sleep mode: src/world/wait.c). The wrappers' last step, and the layer's own calls on
 * communicators that lie in one site. */
#ifndef ISTHMUS_OWN_CALLS_H
#define ISTHMUS_OWN_CALLS_H

#include <mpi.h>

extern int ist_sleep_wait;

/* After a sleeping form: no tail call into it, so that the wrapper that called it stays on
 * the stack and the backtraces isthmus run prints at a timeout name the MPI call. */
#define IST_KEEP_CALLER() __asm__ volatile("")

{body}
#endif
"""


def gen_own_calls_c(functions: list[Function], by_name: dict[str, Function]) -> str:
    forms = "".join(gen_sleep_forms(f, by_name) for f in functions)
    return f"""/* Generated by tools/genwrap.py from src/layer/mpi_functions.txt: do not edit. */
/* The sleeping forms of the blocking calls (src/world/wait.c says why and how). */
#include <mpi.h>

#include "world.h"
{forms}"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("list", type=Path)
    ap.add_argument("outdir", type=Path)
    args = ap.parse_args()
    everything = parse_list(args.list)
    # The profiled functions; the others (group '-') are only routed (gen_routed_wrapper).
    functions = [f for f in everything if f.group != "-"]
    by_name = {f.name: f for f in functions}
    out: Path = args.outdir
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "layer/functions.h": gen_functions_h(functions),
        "layer/functions.c": gen_functions_c(functions),
        "layer/pio_calls.h": gen_pio_calls_h(everything),
        "coll/wan_calls.h": gen_wan_calls_h(functions),
        "world/world_calls.h": gen_world_calls_h(everything),
        "world/own_calls.h": gen_own_calls_h(functions, by_name),
        "world/own_calls.c": gen_own_calls_c(functions, by_name),
        "layer/wrappers_c.c": PREAMBLE
        + "".join(gen_c_wrapper(f, by_name) for f in functions)
        + "".join(gen_routed_wrapper(f) for f in everything if f.group == "-"),
        "layer/wrappers_fortran.c": PREAMBLE
        + FORTRAN_PREAMBLE
        + "".join(gen_fortran_wrapper(f) for f in functions),
    }
    for name, text in files.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


if __name__ == "__main__":
    main()
