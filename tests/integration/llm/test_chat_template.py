#!/usr/bin/env python3
"""Checks llm::ChatTemplate byte for byte against jinja2 configured like transformers' apply_chat_template.

usage: test_chat_template.py DRIVER TEMPLATE_DIR

Every *.jinja in TEMPLATE_DIR (llama.cpp's collection of model templates) and the mini templates below are
rendered for a few conversations by jinja2 and by DRIVER (chat_template_driver, all cases in one process).
A case matches when both give the same text or both raise. Prints `ok NAME`, `FAIL NAME: ...` or
`unsupported NAME: ...` per template and a summary; exits 1 when a mini template or a template listed in
chat_templates_expected.txt does not match. Matching templates missing from that list are printed so the list
can grow.
"""
import datetime
import json
import pathlib
import subprocess
import sys

import jinja2
import jinja2.ext
import jinja2.sandbox
from jinja2 import nodes

HERE = pathlib.Path(__file__).resolve().parent
EXPECTED = HERE / "chat_templates_expected.txt"

CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are a helpful assistant."},
     {"role": "user", "content": "What is 2+2?"}],
    [{"role": "system", "content": "Be brief."},
     {"role": "user", "content": "Name a color."},
     {"role": "assistant", "content": "Blue."},
     {"role": "user", "content": "Another one?"}],
    [{"role": "user", "content": "naïve café — 東京 🙂"},
     {"role": "assistant", "content": 'He said "hi"\nand left.'},
     {"role": "user", "content": "Thanks, it's fine. Ωmega ß"}],
]

# Mini templates, one feature family each; all of them must match.
MINI = {
    "mini-loop-vars": (
        "{% for m in messages %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/"
        "{{ loop.first }}/{{ loop.last }}/{{ loop.length }} "
        "{{ loop.previtem.role if loop.previtem is defined else '-' }} "
        "{{ loop.nextitem.role if loop.nextitem is defined else '-' }} {{ loop.cycle('a', 'b') }}\n{% endfor %}"),
    "mini-loop-forms": (
        "{% for m in messages if m.role == 'user' %}{{ loop.index }}:{{ loop.length }}:{{ m.content }};"
        "{% else %}none{% endfor %}|{% for x in [] %}x{% else %}empty{% endfor %}|"
        "{% for k, v in {'a': 1, 'b': [2]}.items() %}{{ k }}={{ v }},{% endfor %}|"
        "{% for a, b in [(1, 2), [3, 4]] %}{{ a + b }}{% endfor %}|{% for c in 'héllo' %}{{ c }}.{% endfor %}|"
        "{% for k in {'x': 1, 'y': 2} %}{{ k }}{% endfor %}|{% for m in messages %}{% for n in messages %}"
        "{{ loop.index }}{% endfor %}{{ loop.index }};{% endfor %}"),
    "mini-loop-controls": (
        "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i > 5 %}{% break %}{% endif %}"
        "{{ i }}{% endfor %}|{{ range(5)|list }}{{ range(1, 10, 3)|list }}{{ range(5, 0, -2)|list }}"),
    "mini-namespace-scope": (
        "{% set ns = namespace(found=false, count=0, items=[]) %}{% for m in messages %}"
        "{% if m.role == 'system' %}{% set ns.found = true %}{% endif %}{% set ns.count = ns.count + 1 %}"
        "{% set ns.items = ns.items + [m.role] %}{% endfor %}{{ ns.found }} {{ ns.count }} {{ ns.items }} "
        "{% set x = 1 %}{% for m in messages %}{% set x = x + 1 %}{{ x }}{% endfor %} {{ x }} "
        "{% if true %}{% set y = 'set in if' %}{% endif %}{{ y }} {{ ns }} {{ namespace({'a': 1}, b=2).b }}"),
    "mini-slicing": (
        "{% set s = messages[-1].content %}{{ s[0] }}|{{ s[-1] }}|{{ s[1:4] }}|{{ s[::-1] }}|{{ s[::2] }}|"
        "{{ s|length }}|{{ messages[1:]|length }}|{{ messages[:-1]|map(attribute='role')|join(',') }}|"
        "{{ [1, 2, 3, 4, 5][-2:] }}|{{ (1, 2, 3)[1:] }}|{{ 'abc'[5:] }}|{{ 'abc'[-10:2] }}|{{ [1, 2, 3][::-2] }}|"
        "{{ [1, 2, 3][5] is defined }}|{{ s[1:-1:3] }}|{{ 'abcdef'[4:1:-1] }}"),
    "mini-string-filters": (
        "{% for m in messages %}{{ m.content|upper }}|{{ m.content|lower }}|{{ m.content|title }}|"
        "{{ m.content|capitalize }}|{{ ('  ' ~ m.content ~ ' \n ')|trim }}|{{ m.content|trim('H!.') }}|"
        "{{ m.content|replace('a', 'A') }}|{{ m.content|replace('', '-', 3) }}|{{ m.content|wordcount }}|"
        "{{ m.content|center(40) }}|{{ m.content|indent(2) }}|{{ ('x\n\ny')|indent(2, true, true) }}|"
        "{{ 'a\nb'|indent(first=true) }}|{{ m.role|string }}\n{% endfor %}"),
    "mini-string-methods": (
        "{% for m in messages %}{{ m.content.strip() }}|{{ m.content.strip('H!') }}|{{ m.content.lstrip('Hn') }}|"
        "{{ m.content.rstrip('!?.') }}|{{ m.content.split() }}|{{ m.content.split(' ', 1) }}|"
        "{{ m.content.rsplit(' ', 1) }}|{{ m.content.startswith('He') }}|{{ m.content.startswith(('x', 'Wh')) }}|"
        "{{ m.content.endswith('!') }}|{{ m.content.upper() }}|{{ m.content.lower() }}|{{ m.content.title() }}|"
        "{{ m.content.capitalize() }}|{{ m.content.replace('e', 'E', 1) }}|{{ m.content.find('e') }}|"
        "{{ m.content.count('e') }}|{{ '-'.join(['a', m.role]) }}|{{ '{}:{}'.format(m.role, loop.index) }}|"
        "{{ m.content.splitlines() }}|{{ m.content.split('\n')[0] }}|{{ '  a  b '.split() }}|"
        "{{ 'a,b,,c'.split(',') }}|{{ m.content.rfind('e') }}\n{% endfor %}"),
    "mini-python-str": (
        "{{ none }}|{{ true }}|{{ false }}|{{ 1.0 }}|{{ 0.5 }}|{{ 1e20 }}|{{ 1.5e-7 }}|{{ 10 / 4 }}|{{ 10 // 4 }}|"
        "{{ -7 // 2 }}|{{ -7 % 3 }}|{{ 2 ** 10 }}|{{ 2 ** -1 }}|{{ [1, 'a', none, true, 1.5, ['x']] }}|"
        "{{ {'a': 1, 'b': none, 'c': \"it's\"} }}|{{ ('a',) }}|{{ (1, 2) }}|{{ 'x' * 3 }}|{{ [0] * 3 }}|"
        "{{ 'a' ~ 1 ~ none }}|{{ messages[0] }}|{{ 1 == 1.0 }}|{{ 0.1 + 0.2 }}|{{ 3 * 1.1 }}|"
        "{{ 100000000000000000.0 }}|{{ 1 / 3 }}|{{ 1_000 }}|{{ 'tab\there' }}|{{ ['new\nline', 'q\"', \"s'\"] }}|"
        "{{ -0.0 }}|{{ 2.5e-5 }}|{{ 123456789.125 }}|{{ 'a' 'b' }}|{{ '\\u00e9\\x41' }}"),
    "mini-tests": (
        "{% for v in [none, true, 0, 1.5, 'str', [1], {'a': 1}, undefined_name] %}"
        "{{ v is defined }}{{ v is undefined }}{{ v is none }}{{ v is string }}{{ v is number }}"
        "{{ v is integer }}{{ v is float }}{{ v is mapping }}{{ v is iterable }}{{ v is sequence }}"
        "{{ v is boolean }}{{ v is true }}{{ v is false }}{{ v is not none }};{% endfor %}|"
        "{{ 4 is even }}{{ 3 is odd }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ none is sameas none }}"
        "{{ 'a' is eq 'a' }}{{ 1 is ne 2 }}{{ 1 is lt 2 }}{{ 3 is gt 2 }}{{ 'a' is in 'cat' }}{{ 2 is in [1, 2] }}"
        "{{ 1 is equalto 1 }}{{ messages is sequence }}{{ messages[0] is mapping }}{{ 'ab' is lower }}"
        "{{ 'AB' is upper }}{{ range is callable }}{{ 'upper' is filter }}{{ 'odd' is test }}"),
    "mini-filters": (
        "{{ messages|map(attribute='role')|list }}|{{ messages|selectattr('role', 'equalto', 'user')|list|length }}|"
        "{{ messages|rejectattr('role', 'eq', 'user')|map(attribute='content')|join(', ') }}|{{ [3, 1, 2]|sort }}|"
        "{{ ['b', 'A', 'c']|sort }}|{{ ['b', 'A', 'c']|sort(reverse=true, case_sensitive=true) }}|"
        "{{ messages|sort(attribute='role')|map(attribute='role')|join }}|{{ ['a', 'A', 'b', 'a']|unique|list }}|"
        "{{ [1, 2, 3]|reverse|list }}|{{ 'abc'|reverse }}|{{ [1, 2, 3]|sum }}|{{ [1, 5, 3]|min }}|"
        "{{ [1, 5, 3]|max }}|{{ {'b': 1, 'a': 2}|dictsort }}|{{ {'b': 1, 'a': 2}|items|list }}|"
        "{{ [1, 2, 3, 4, 5]|batch(2)|list }}|{{ [1, 0, 2, none]|select|list }}|{{ [1, 2, 3, 4]|reject('odd')|list }}|"
        "{{ [1, 2, 3, 4]|select('divisibleby', 2)|list }}|{{ ['1', '2']|map('int')|sum }}|{{ -3|abs }}|"
        "{{ '3.7'|float }}|{{ '42'|int + 1 }}|{{ 'x'|int }}|{{ 3.7|int }}|{{ 2.5|round }}|{{ 3.14159|round(2) }}|"
        "{{ 2.1|round(0, 'ceil') }}|{{ messages|first }}|{{ (messages|last).role }}|{{ undefined_name|default('dflt') }}|"
        "{{ ''|default('empty', true) }}|{{ none|d('n', boolean=true) }}|{{ messages|length }}|{{ messages|count }}|"
        "{{ 5|string ~ 'x' }}|{{ [1, 2]|join('-') }}|{{ 'a<b'|e }}|{{ ('<' ~ 'x')|safe }}|"
        "{{ messages|map(attribute='role')|map('upper')|join(',') }}|{{ [{'a': {'b': 1}}]|map(attribute='a.b')|list }}|"
        "{{ ['x', 'y']|list|length }}|{{ 'hey'|list }}|{{ {'k': 1}|list }}|{{ [[1, 2], [3]]|map('length')|list }}|"
        "{{ ['B', 'a']|min }}|{{ ['b', 'A']|max(case_sensitive=true) }}|{{ [1, 2]|sum(start=10) }}"),
    "mini-tojson": (
        "{{ messages|tojson }}|{{ messages[0]|tojson(indent=2) }}|"
        "{{ {'a': [1, 2.5, none, true], 'b': 'é\"\\n', 'c': {}}|tojson }}|{{ {'z': 1, 'a': 2}|tojson(sort_keys=true) }}|"
        "{{ [[], {}, [1]]|tojson(indent=4) }}|{{ 'x<y>&\\''|tojson }}|{{ messages[-1].content|tojson(ensure_ascii=true) }}|"
        "{{ {1: 'int key', none: 0}|tojson }}|{{ (1, 'a')|tojson }}|{{ 1e100|tojson }}"),
    "mini-macros": (
        "{% macro greet(m, prefix='> ', suffix=none) %}{{ prefix }}{{ m.role }}: {{ m.content }}"
        "{% if suffix %}{{ suffix }}{% endif %}{% endmacro %}{% for m in messages %}{{ greet(m) }}\n"
        "{{ greet(m, '* ', suffix='!') }}\n{% endfor %}{% macro rec(n) %}{% if n > 0 %}{{ n }}{{ rec(n - 1) }}"
        "{% endif %}{% endmacro %}{{ rec(5) }}{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}"
        "{% call wrap('b') %}inner {{ messages|length }}{% endcall %}{% set r = greet(messages[0]) %}{{ r|length }}"),
    "mini-whitespace": (
        "{#- comment -#}\n  {% for m in messages %}\n    {{- m.role }}\n  {%- if loop.first %}\n      first\n"
        "  {% endif %}\n  {{ m.content }}  \n{% endfor %}\n    {# indented comment #}\nend  {{- ' x ' -}}  end\n"
        "{% raw %}{{ not parsed }} {% if %}{% endraw %}\n  {%+ if true %}kept indent{% endif %}\n"
        "{% if true +%}\nno trim\n{% endif %}\n\t{% if true %}\ttab\n\t{% endif %}\n  {{ 'var keeps indent' }}\n"
        "a {% if true %}inline{% endif %} b\n{%- if true -%}   \n  stripped  \n  {%- endif -%}\n  z\n\n"),
    "mini-conditions": (
        "{% for m in messages %}{% if m.role == 'user' and not loop.first %}A{% elif m.role in ['system', "
        "'assistant'] %}B{% else %}C{% endif %}{{ 'odd' if loop.index is odd else 'even' }}{{ 'x' if false }}|"
        "{% endfor %}{{ 1 < 2 < 3 }}{{ 3 > 2 > 5 }}{{ 'a' in 'cat' }}{{ 'z' not in ['a'] }}{{ none or 'fallback' }}"
        "{{ 0 and 1 }}{{ [] or [1] }}{{ 'x' and 'y' }}{{ not none }}{{ -(3) }}{{ 1 if none is none }}"
        "{{ not messages[0].role == 'user' }}{{ messages|length > 2 and messages[2].role == 'assistant' }}"
        "{{ 'k' in {'k': 1} }}{{ 1 in [1.0] }}{{ (1, 2) == (1, 2) }}{{ [1] == (1,) }}{{ 'b' > 'a' }}"),
    "mini-set-blocks": (
        "{% set content %}{% for m in messages %}{{ m.role }} {% endfor %}{% endset %}[{{ content|trim }}]"
        "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = messages|length, 'x' %}{{ t }}"
        "{% set y | upper %}shout {{ a }}{% endset %}{{ y }}{% filter upper %}filtered {{ b }}{% endfilter %}"
        "{% generation %}gen {{ a }}{% endgeneration %}{% with w = 5 %}{{ w }}{% endwith %}{{ w is defined }}"),
    "mini-dict-access": (
        "{% set d = {'role': 'r', 'items': 'i', 'n': {'x': [10, 20]}} %}{{ d.role }}{{ d['role'] }}{{ d.n.x[1] }}"
        "{{ d['n']['x'][-1] }}{{ d.missing is defined }}{{ d.get('missing', 'dflt') }}{{ d.get('role') }}"
        "{{ d.get('zz') }}{{ d.keys()|list }}{{ d.values()|list|length }}{% for k in d %}{{ k }},{% endfor %}"
        "{{ d['items'] }}{{ d.items is defined }}{{ messages[0].content is string }}{{ messages[10] is defined }}"
        "{{ 'abc'.nothing is defined }}{{ none.x is defined }}{{ d.n.x.0 }}{{ messages[0]['content'][0] }}"),
    "mini-strftime": "{{ strftime_now('%Y-%m-%d') }} {{ strftime_now('%d %b %Y') }}",
    "mini-error-raise": "a{{ raise_exception('boom: ' ~ messages|length) }}",
    "mini-error-undefined-attr": "{{ nothing.attr.more }}",
    "mini-error-types": "{% if messages|length > 1 %}{{ messages + 1 }}{% else %}{{ 'a' < 1 }}{% endif %}",
    "mini-error-unknown-filter": "{{ messages|no_such_filter }}",
    "mini-unknown-filter-in-if": "{% if false %}{{ messages|no_such_filter }}{% endif %}ok",
    "mini-error-unknown-filter-in-for": "{% if false %}{% for m in messages %}{{ m|nope }}{% endfor %}{% endif %}ok",
    "mini-error-mutation": "{{ messages.append(1) }}",
    "mini-mutation-undefined": "{{ messages.pop is defined }}{{ {}.update is defined }}",
    "mini-error-recursion": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    "mini-error-syntax": "{% for m in messages %}{{ m.role }",
    "mini-error-unclosed": "{% if true %}never closed",
    "mini-error-none-iter": "{% for x in none %}{% endfor %}",
}


class GenerationTracker(jinja2.ext.Extension):
    """transformers' {% generation %} tag: renders its body (it also records the span, not needed here)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.datetime.now().strftime(format)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def cases_for(source):
    cases = []
    for k, conv in enumerate(CONVERSATIONS):
        for agp in (False, True):
            cases.append({"template": source, "messages": conv, "add_generation_prompt": agp,
                          "bos_token": "<s>", "eos_token": "</s>"})
        if k == 1:
            cases.append({"template": source, "messages": conv, "add_generation_prompt": True,
                          "bos_token": "", "eos_token": "</s>"})
    return cases


def render_reference(env, source, case):
    try:
        tmpl = env.from_string(source)
        return {"text": tmpl.render(messages=case["messages"], add_generation_prompt=case["add_generation_prompt"],
                                    bos_token=case["bos_token"], eos_token=case["eos_token"])}
    except Exception as e:  # any raise counts, as in transformers
        return {"error": f"{type(e).__name__}: {e}"}


def first_difference(want, got):
    n = next((k for k in range(min(len(want), len(got))) if want[k] != got[k]), min(len(want), len(got)))
    return f"at char {n}: jinja2 {want[max(0, n - 20):n + 30]!r} vs ours {got[max(0, n - 20):n + 30]!r}"


def judge(ref_results, our_results):
    """('ok', '') or ('FAIL' | 'unsupported', why) for one template's cases."""
    for case_no, (ref, ours) in enumerate(zip(ref_results, our_results)):
        if "error" in ref and "error" in ours:
            continue
        if "text" in ref and "text" in ours and ref["text"] == ours["text"]:
            continue
        if "error" in ours:
            return "unsupported", f"case {case_no}: {ours['error']}"
        if "error" in ref:
            return "FAIL", f"case {case_no}: jinja2 raised {ref['error'][:200]!r}, ours rendered"
        return "FAIL", f"case {case_no}: {first_difference(ref['text'], ours['text'])}"
    return "ok", ""


def read_expected():
    names = set()
    for line in EXPECTED.read_text().splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            names.add(name)
    return names


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    driver, template_dir = sys.argv[1], pathlib.Path(sys.argv[2])
    templates = dict(MINI)
    for path in sorted(template_dir.glob("*.jinja")):
        templates[path.stem] = path.read_text()
    if len(templates) == len(MINI):
        sys.exit(f"no *.jinja templates in {template_dir}")

    env = make_env()
    names, all_cases = [], []
    for name, source in templates.items():
        for case in cases_for(source):
            names.append(name)
            all_cases.append(case)
    stdin = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in all_cases)
    proc = subprocess.run([driver], input=stdin.encode(), capture_output=True, timeout=600)
    lines = proc.stdout.decode("utf-8", errors="replace").splitlines()
    if proc.returncode != 0 or len(lines) != len(all_cases):
        sys.exit(f"driver failed (exit {proc.returncode}, {len(lines)} of {len(all_cases)} lines): "
                 f"{proc.stderr.decode(errors='replace')[-2000:]}")
    ours = [json.loads(line) for line in lines]

    expected = read_expected()
    counts = {"ok": 0, "FAIL": 0, "unsupported": 0}
    bad, unlisted, model_ok = [], [], 0
    for name, source in templates.items():
        idx = [k for k, n in enumerate(names) if n == name]
        status, why = judge([render_reference(env, source, all_cases[k]) for k in idx], [ours[k] for k in idx])
        counts[status] += 1
        model_ok += status == "ok" and name not in MINI
        print(f"{status} {name}" + (f": {why}" if why else ""))
        required = name in MINI or name in expected
        if status != "ok" and required:
            bad.append(name)
        if status == "ok" and not required:
            unlisted.append(name)
    print(f"\n{counts['ok']} ok, {counts['FAIL']} FAIL, {counts['unsupported']} unsupported "
          f"({model_ok} of {len(templates) - len(MINI)} model templates match)")
    for name in unlisted:
        print(f"matches but not in {EXPECTED.name}: {name}")
    if bad:
        print(f"expected to match but did not: {' '.join(bad)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
