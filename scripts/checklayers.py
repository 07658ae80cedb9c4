#!/usr/bin/env python3
"""Checks the layers of src/ against the rules in cmake/layers.txt.

Usage: checklayers.py RULES SRC_DIR [BUILD_DIR]

Every `#include "dir/file.h"` of a file in SRC_DIR/FOLDER must name FOLDER itself or what the
rules let FOLDER use; every `#include <lib.h>` of a library named by an `extern` rule must come
from a folder that rule lists. With BUILD_DIR, the same rules are checked on the objects: each
global symbol a folder's objects leave undefined and another folder's objects define must
come from a folder (or, for a one-header entry, the object of that header's .c) it may use,
and each symbol of an outside library named by a `symbols` rule must be used by a folder
that rule lists. That catches a call declared by hand, which no #include shows.  Inside a
folder with module rules ("daemon/life: daemon/exec ..."), each subfolder is a module, every
source file lies in one, and a module's objects call only the modules its rule lists; a
header a `private` rule names (a module's own state of each job, its internals) may be
included only by the files of the module whose folder holds it.  Exits 1 naming each breach.
"""
import fnmatch
import os
import re
import subprocess
import sys

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def parse_rules(path):
    """Returns (uses, externs, symbols, exceptions, modules): folder -> set of entries; header ->
    set of folders; symbol prefix -> set of folders; set of (file, header or symbol); and the
    modules inside a folder: {"uses": module -> set of modules, "private": folder -> patterns
    of the headers private to their module}, a module named FOLDER/NAME being the subfolder
    src/FOLDER/NAME."""
    uses, externs, symbols, exceptions = {}, {}, {}, set()
    modules = {'uses': {}, 'private': {}}
    with open(path, encoding='utf-8') as f:
        for n, raw in enumerate(f, 1):
            line = raw.split('#', 1)[0].strip()
            if not line:
                continue
            if line.startswith('except '):
                parts = line.split(None, 3)
                if len(parts) < 4:
                    sys.exit(f'{path}:{n}: an exception needs a file, a header and a reason')
                exceptions.add((parts[1], parts[2]))
                continue
            key, sep, rest = line.partition(':')
            if not sep:
                sys.exit(f'{path}:{n}: expected "FOLDER: ENTRIES", got "{line}"')
            key, entries = key.strip(), set(rest.split())
            if key.startswith('private '):
                modules['private'][key.split(None, 1)[1].strip()] = sorted(entries)
            elif '/' in key:
                modules['uses'][key] = entries
            elif key.startswith('extern '):
                externs[key.split(None, 1)[1].strip()] = entries
            elif key.startswith('symbols '):
                symbols[key.split(None, 1)[1].strip()] = entries
            else:
                uses[key] = entries
    return uses, externs, symbols, exceptions, modules


def allowed_include(uses, folder, header):
    target = header.split('/', 1)[0]
    entries = uses.get(folder, set())
    return target == folder or target in entries or header in entries


def extern_rule(externs, header):
    for name, folders in externs.items():
        if header == name or (name.endswith('/') and header.startswith(name)):
            return name, folders
    return None, None


def source_files(fdir):
    """The .c and .h files under fdir, its module folders' included, as paths relative to it."""
    out = []
    for root, dirs, files in os.walk(fdir):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(('.c', '.h')):
                out.append(os.path.relpath(os.path.join(root, name), fdir))
    return out


def private_breach(modules, rel, header):
    """Why src/rel may not include header, a header private to another module; None when it
    may (the header is not private, or rel lies in the module folder that holds it)."""
    parts = header.split('/')
    if len(parts) != 3 or not any(fnmatch.fnmatchcase(parts[2], p)
                                  for p in modules['private'].get(parts[0], ())):
        return None
    owner = f'{parts[0]}/{parts[1]}'
    mine = '/'.join(rel.split('/')[:2]) if rel.count('/') >= 2 else rel.split('/')[0]
    if mine == owner:
        return None
    return (f'{header} is private to {owner} (rule "private {parts[0]}:"): '
            f'{mine} reaches it through {owner}\'s functions, not its state')


def check_includes(uses, externs, exceptions, src, modules):
    bad = []
    for folder in sorted(os.listdir(src)):
        fdir = os.path.join(src, folder)
        if not os.path.isdir(fdir):
            continue
        if folder not in uses:
            bad.append(f'{fdir}: folder has no rule in the layers table')
            continue
        for sub in source_files(fdir):
            rel = f'{folder}/{sub}'
            with open(os.path.join(fdir, sub), encoding='utf-8', errors='replace') as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE_RE.match(line)
                    if not m or (rel, m.group(2)) in exceptions:
                        continue
                    kind, header = m.groups()
                    if kind == '"':
                        if '/' not in header:
                            bad.append(f'src/{rel}:{n}: #include "{header}": name the folder '
                                       f'("{folder}/{header}") so the layer shows')
                        elif not allowed_include(uses, folder, header):
                            may = ', '.join([folder] + sorted(uses[folder]))
                            bad.append(f'src/{rel}:{n}: #include "{header}": {folder} may use '
                                       f'only {may} (rule "{folder}:")')
                        elif why := private_breach(modules, rel, header):
                            bad.append(f'src/{rel}:{n}: #include "{header}": {why}')
                    else:
                        rule, folders = extern_rule(externs, header)
                        if rule and folder not in folders:
                            bad.append(f'src/{rel}:{n}: #include <{header}>: only '
                                       f'{", ".join(sorted(folders))} may use it '
                                       f'(rule "extern {rule}:")')
    return bad


def objects_by_folder(build, src):
    """folder -> list of object files, from the CMake target directories of the build; an
    object whose source is gone (left from an older tree) is not counted."""
    out = {}
    for root, _dirs, files in os.walk(os.path.join(build, 'CMakeFiles')):
        for name in files:
            path = os.path.join(root, name)
            m = re.search(r'\.dir/src/([a-z_]+)/((?:[a-z_]+/)*[^/]+\.c)\.o$', path)
            if m and os.path.exists(os.path.join(src, m.group(1), m.group(2))):
                out.setdefault(m.group(1), []).append(path)
    return out


def nm_symbols(paths):
    """path -> (defined, undefined) global symbol sets, from one nm run over all objects."""
    res = subprocess.run(['nm', '-g', '-A'] + paths, capture_output=True, text=True, check=True)
    out = {p: (set(), set()) for p in paths}
    for line in res.stdout.splitlines():
        path, _, rest = line.partition(':')
        parts = rest.split()
        if path not in out:
            continue
        defined, undefined = out[path]
        if len(parts) == 2 and parts[0] == 'U':
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] not in 'Uw':
            defined.add(parts[2])
    return out


def check_links(uses, symbols, exceptions, src, build):
    objs = objects_by_folder(build, src)
    if not objs:
        return [f'{build}: no objects of src/ found (build it first)']
    where, needs = {}, []
    syms = nm_symbols(sorted({p for paths in objs.values() for p in paths}))
    for folder, paths in sorted(objs.items()):
        for path in sorted(set(paths)):
            stem = os.path.basename(path)[:-len('.c.o')]
            defined, undefined = syms[path]
            for sym in defined:
                where.setdefault(sym, (folder, stem))
            needs.append((folder, stem, undefined))
    bad = set()
    for folder, stem, undefined in needs:
        for sym in undefined:
            if sym not in where:
                rule = next((p for p in symbols if sym.startswith(p)), None)
                if (rule and folder not in symbols[rule]
                        and (f'{folder}/{stem}.c', sym) not in exceptions):
                    who = ', '.join(sorted(symbols[rule]))
                    bad.add(f'src/{folder}/{stem}.c uses {sym}: only {who} may use it '
                            f'(rule "symbols {rule}:")')
                continue
            tfolder, tstem = where[sym]
            header = f'{tfolder}/{tstem}.h'
            if (f'{folder}/{stem}.c', header) in exceptions:
                continue
            if not allowed_include(uses, folder, header):
                bad.add(f'src/{folder}/{stem}.c uses {sym} from src/{tfolder}/{tstem}.c: '
                        f'{folder} may not use {header} (rule "{folder}:")')
    return sorted(bad)


def source_of(path):
    """src/FOLDER/[MODULE/]NAME.c of an object file."""
    return 'src/' + re.search(r'\.dir/src/((?:[a-z_]+/)+[^/]+\.c)\.o$', path).group(1)


def module_of(modules, folder, path):
    """FOLDER/MODULE for an object of src/FOLDER/MODULE/, a module being a subfolder that
    has a use rule; None for a file of no module folder."""
    parts = source_of(path).split('/')
    if len(parts) < 4:
        return None
    name = f'{folder}/{parts[2]}'
    return name if name in modules['uses'] else None


def module_cycles(muses):
    """The cycles of the modules' use rules, each as a list of names (empty: none)."""
    cycles, state = [], {}

    def visit(m, path):
        state[m] = 'open'
        for n in sorted(muses.get(m, ())):
            if state.get(n) == 'open':
                cycles.append(path[path.index(n):] + [n])
            elif n not in state:
                visit(n, path + [n])
        state[m] = 'done'

    for m in sorted(muses):
        if m not in state:
            visit(m, [m])
    return cycles


def check_modules(modules, exceptions, src, build):
    """Inside a folder that has modules, every file belongs to one, and a file may call into
    another module's files only where its module's rule lists that module; the rules
    themselves must not go round in a loop."""
    bad = [f'module rules go round in a loop: {" -> ".join(c)}' for c in module_cycles(modules['uses'])]
    folders = {m.split('/', 1)[0] for m in modules['uses']}
    objs = objects_by_folder(build, src)
    for folder in sorted(folders):
        paths = sorted(set(objs.get(folder, [])))
        syms = nm_symbols(paths) if paths else {}
        where, owner = {}, {}
        for path in paths:
            owner[path] = module_of(modules, folder, path)
            if owner[path] is None:
                bad.append(f'{source_of(path)} belongs to no module of {folder}: a module is a '
                           f'subfolder of src/{folder} with a rule in cmake/layers.txt')
            for sym in syms[path][0]:
                where.setdefault(sym, path)
        for path in paths:
            mine = owner[path]
            for sym in sorted(syms[path][1]):
                other = where.get(sym)
                if other is None or mine is None or owner[other] in (None, mine):
                    continue
                if (owner[other] not in modules['uses'].get(mine, set())
                        and (source_of(path)[4:], sym) not in exceptions):
                    may = ', '.join(sorted(modules['uses'].get(mine, set()))) or 'nothing else'
                    bad.append(f'{source_of(path)} ({mine}) calls {sym} of {source_of(other)} '
                               f'({owner[other]}): {mine} may use {may}')
    return bad


def main(argv):
    if len(argv) not in (3, 4):
        sys.exit(__doc__)
    uses, externs, symbols, exceptions, modules = parse_rules(argv[1])
    bad = check_includes(uses, externs, exceptions, argv[2], modules)
    if len(argv) == 4:
        bad += check_links(uses, symbols, exceptions, argv[2], argv[3])
        bad += check_modules(modules, exceptions, argv[2], argv[3])
    if bad:
        print('layer check: the layers of src/ are crossed (rules: cmake/layers.txt):',
              file=sys.stderr)
        for b in bad:
            print('  ' + b, file=sys.stderr)
        return 1
    print('layer check: ok' + (' (includes and objects)' if len(argv) == 4 else ''))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
