"""The units ctest runs a Python test file in, read from the file's syntax (nothing imported).

    cases.py FILE...   one line per unit: FILE|SELECTOR  (SELECTOR empty: the whole file)

A unit is one test method (Class.test_x) where each method starts its own fixtures, so that
ctest can run them side by side and start the longest first.  A class whose fixtures are
shared (setUpClass) is one unit (Class), and a file with setUpModule is one unit: splitting
them would start their shared daemon once per method.  Classes count as tests the way
unittest's loader counts them: subclasses of TestCase or of DaemonTest (gwtest), directly or
through another class of the same file, with the test_ methods of every base of the file."""
import ast
import sys

TEST_BASES = {"TestCase", "DaemonTest"}
SHARED = {"setUpClass", "tearDownClass"}


def base_names(cls):
    for b in cls.bases:
        if isinstance(b, ast.Name):
            yield b.id
        elif isinstance(b, ast.Attribute):
            yield b.attr


def units(path):
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    top = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    if "setUpModule" in top:
        return [""]
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def lineage(name, seen=()):
        """The class and its bases defined in this file, nearest first."""
        if name not in classes or name in seen:
            return []
        out = [classes[name]]
        for b in base_names(classes[name]):
            out += lineage(b, seen + (name,))
        return out

    def is_test(name):
        return any(b in TEST_BASES or is_test(b) for b in base_names(classes[name])
                   if b != name and (b in TEST_BASES or b in classes))

    out = []
    for name, cls in classes.items():
        if not is_test(name):
            continue
        line = lineage(name)
        methods = []
        for c in line:
            for n in c.body:
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test") \
                        and n.name not in methods:
                    methods.append(n.name)
        if not methods:
            continue
        if any(isinstance(n, ast.FunctionDef) and n.name in SHARED for c in line for n in c.body):
            out.append(name)
        else:
            out += [f"{name}.{m}" for m in sorted(methods)]
    return out


def main():
    for path in sys.argv[1:]:
        for u in units(path):
            print(f"{path}|{u}")


if __name__ == "__main__":
    main()
