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


def test_conversions_through_ast_objects_take_turns_across_threads():
    # CPython 3.11/3.12 keep one depth count per interpreter for them (python/cpython#106905): a
    # compile in backend tiered's thread must not interleave with one in the program's thread
    import threading

    from dynamo.fx_ir import user_lines

    compiled = threading.Event()

    def compile_beside():
        compile_at_user_lines(SOURCE, "<generated>")
        compiled.set()

    with user_lines._AST_IN_USE:  # this thread is converting
        thread = threading.Thread(target=compile_beside)
        thread.start()
        assert not compiled.wait(0.5)  # the other waits for its turn
    thread.join(10)
    assert compiled.is_set()
