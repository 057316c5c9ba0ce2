"""Generated code compiled at the user's lines (fx_ir.user_lines): which line each statement takes."""
import dis

from dynamo.fx_ir.user_lines import compile_at_user_lines

SOURCE = '''\
# File "user.py", line 10
q = 1
# File "user.py", line 20
a = q + 1
# File "user.py", line 30
for i in range(3):
    a = a + i
    # File "user.py", line 40
    c = a * 2
d = a + 1
'''


def stores(code):
    return [(inst.argval, inst.positions.lineno) for inst in dis.get_instructions(code) if inst.opname == "STORE_NAME"]


def test_statements_take_the_comment_before_them_or_where_their_target_was_computed():
    code = compile_at_user_lines(SOURCE, "<generated>")
    assert code.co_filename == "user.py"
    # in the loop body, `a = a + i` has no comment of its own in its block: the line `a` was
    # computed at; `d` after the loop takes the loop's comment, as the rest of its block
    assert stores(code) == [("q", 10), ("a", 20), ("i", 30), ("a", 20), ("c", 40), ("d", 30)]
    namespace: dict = {}
    exec(code, namespace)
    assert (namespace["a"], namespace["c"], namespace["d"]) == (5, 10, 6)


def test_source_without_comments_compiles_as_it_is():
    code = compile_at_user_lines("x = 1\ny = x + 1\n", "<generated>")
    assert code.co_filename == "<generated>" and stores(code) == [("x", 1), ("y", 2)]


def test_a_body_on_its_statements_line_takes_that_line():
    source = (
        "def run(x):\n"
        "    seen = None\n"
        '    # File "user.py", line 25\n'
        "    flags = x + 1\n"
        "    if flags: seen = flags * 2\n"
        '    # File "user.py", line 27\n'
        "    if seen is not None: seen = seen - 1\n"
        "    return seen\n")
    code = compile_at_user_lines(source, "<generated>")
    run = next(c for c in code.co_consts if hasattr(c, "co_code"))
    assert stores(run) == []  # STORE_FAST in a function
    fast = [(i.argval, i.positions.lineno) for i in dis.get_instructions(run) if i.opname == "STORE_FAST"]
    assert fast == [("seen", 25), ("flags", 25), ("seen", 25), ("seen", 27)]
    assert run.co_filename == "user.py" and run.co_firstlineno == 25
    namespace: dict = {}
    exec(code, namespace)
    assert namespace["run"](1) == 3


def test_no_python_ast_object_is_made(monkeypatch):
    # CPython 3.11/3.12 keep one depth count per interpreter for conversions between ast objects and
    # the compiler's tree (python/cpython#106905): a compile in backend tiered's thread must not make
    # any, or it can break one the program makes at the same time (pytest's assertion rewriting)
    from dynamo.fx_ir import user_lines

    def no_parse(*args, **kwargs):
        raise AssertionError("ast.parse called")

    monkeypatch.setattr(user_lines.ast, "parse", no_parse)
    code = compile_at_user_lines(SOURCE, "<generated>")
    assert stores(code) == [("q", 10), ("a", 20), ("i", 30), ("a", 20), ("c", 40), ("d", 30)]


def test_a_statement_over_several_lines_is_relocated_through_the_tree():
    source = '# File "user.py", line 7\nx = (1 +\n     2)\n# File "user.py", line 9\ny = [x,\n     x]\n'
    code = compile_at_user_lines(source, "<generated>")
    assert stores(code) == [("x", 7), ("y", 9)]
    lines = {i.positions.lineno for i in dis.get_instructions(code) if i.positions.lineno}
    assert lines <= {7, 9}
