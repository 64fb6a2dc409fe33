"""Demangling against c++filt (C++, and Rust with `-s rust`).

Rust programs are compiled here when rustc is present; std itself ships v0
names, so a v0 build yields hundreds of them. Deliberate difference, as
rustc-demangle's `{:#}` form prints them: crate disambiguators (`m[f19d...]`)
and const-generic types (`<3: usize>` -> `<3>`) are left out; legacy names
lose their `::h<hash>` as perf prints them.
"""
import re
import shutil
import subprocess

import pytest

from symbolize import demangle, demangle_rust_legacy, demangle_rust_v0
from test_symbolize_util import compile_c, need, run

CPP = r"""
#include <map>
#include <string>
#include <vector>
#include <functional>
#include <cstdio>
namespace outer { namespace inner {
template <class T, int N> struct Box { T v[N]; __attribute__((noinline)) T sum() const { T s{}; for (auto& x : v) s += x; return s; } };
struct Op { int x; bool operator<(const Op& o) const { return x < o.x; } Op operator+(const Op& o) const { return {x + o.x}; } };
} }
__attribute__((noinline)) int take(std::function<int(int)> f, const std::map<std::string, std::vector<int>>& m) { return f((int)m.size()); }
int main(int argc, char**) {
    outer::inner::Box<double, 3> b{{1, 2, 3}};
    std::map<std::string, std::vector<int>> m{{"a", {1}}};
    auto lam = [argc](int y) { return y + argc; };
    outer::inner::Op a{1}, c{2};
    std::printf("%f %d %d\n", b.sum(), take(lam, m), (a + c).x + (a < c));
}
"""

RUST = r"""
use std::collections::HashMap;
struct Foo<T>(T);
impl<T: std::fmt::Debug> Foo<T> { #[inline(never)] fn show(&self) -> String { format!("{:?}", self.0) } }
trait Tr { fn go(&self) -> usize; }
impl Tr for [u8; 4] { #[inline(never)] fn go(&self) -> usize { self.len() } }
#[inline(never)] fn generic<const N: usize>(x: [i32; N]) -> i32 { x.iter().sum() }
fn main() {
    let mut m: HashMap<String, Vec<(u8, char)>> = HashMap::new();
    m.insert("a".into(), vec![(1, 'x')]);
    let c = |x: i32| x + 1;
    println!("{} {} {} {} {:?}", Foo(3u64).show(), [1u8, 2, 3, 4].go(), generic([1, 2, 3]), c(4), m);
}
"""


def cxxfilt_cmd(names, *args):
    need("c++filt")
    return subprocess.run(["c++filt", *args], input="\n".join(names), capture_output=True,
                          text=True).stdout.splitlines()


def test_cpp_names_match_cxxfilt(tmp_path):
    prog = compile_c(tmp_path, "cpp", CPP, "-O2", lang="cpp")
    names = sorted({l.split()[-1] for l in run("nm", prog).splitlines() if l.split()[-1].startswith("_Z")})
    assert len(names) > 20
    truth = cxxfilt_cmd(names)
    assert [demangle(n) for n in names] == truth
    assert demangle(names[0], enabled=False) == names[0]


def test_plt_and_version_suffixes_kept():
    assert demangle("_Znwm@plt") == "operator new(unsigned long)@plt"
    assert demangle("_ZdlPv@GLIBCXX_3.4") == "operator delete(void*)@GLIBCXX_3.4"
    assert demangle("puts@plt") == "puts@plt"


def test_bad_names_are_kept():
    for n in ["", "_Z", "_Zbogus", "_ZN3foo", "_R", "_RNvC", "_RB_", "_RNvCs_3a", "main", "_ZN1a17h0123E",
              "_R" + "N" * 5000, "_RINvC1a1bE" + "B2_" * 50]:
        assert demangle(n) == n


@pytest.fixture(scope="module")
def rust_bins(tmp_path_factory):
    if shutil.which("rustc") is None:
        pytest.skip("rustc not installed")
    d = tmp_path_factory.mktemp("rust")
    src = d / "m.rs"
    src.write_text(RUST)
    out = {}
    for kind, extra in (("legacy", ["-C", "symbol-mangling-version=legacy"]),
                        ("v0", ["-C", "symbol-mangling-version=v0"])):
        p = subprocess.run(["rustc", "-O", *extra, str(src), "-o", str(d / kind)],
                           capture_output=True, text=True)
        if p.returncode != 0 and kind == "legacy":
            p = subprocess.run(["rustc", "-O", str(src), "-o", str(d / kind)], capture_output=True, text=True)
        if p.returncode != 0:
            pytest.skip(f"rustc failed: {p.stderr[:200]}")
        out[kind] = str(d / kind)
    return out


def test_rust_legacy_matches_cxxfilt_without_hash(rust_bins):
    names = [l.split()[-1] for l in run("nm", rust_bins["legacy"]).splitlines()]
    names = sorted({n for n in names if re.match(r"_ZN.*17h[0-9a-f]{16}E", n)})
    assert names
    truth = [re.sub(r"::h[0-9a-f]{16}$", "", t) for t in cxxfilt_cmd(names)]
    assert [demangle_rust_legacy(n) for n in names] == truth


def test_rust_v0_matches_cxxfilt(rust_bins):
    names = sorted({l.split()[-1] for l in run("nm", rust_bins["v0"]).splitlines()
                    if l.split()[-1].startswith("_R")})
    assert len(names) > 50
    truth = cxxfilt_cmd(names, "-s", "rust")
    if truth and truth[0] == names[0]:
        pytest.skip("this c++filt does not know Rust v0")
    norm = [re.sub(r"(\d+|true|false|'.*?'): \w+", r"\1", re.sub(r"\[[0-9a-f]+\]", "", t)) for t in truth]
    ours = [demangle_rust_v0(n) for n in names]
    assert ours == norm


def test_rust_v0_reference_vectors():
    # Vectors from the rustc-demangle crate's test suite (v0 alternate form);
    # the punycode one re-encoded with Python's punycode codec.
    vectors = {
        "_RNvC6_123foo3bar": "123foo::bar",
        "_RNCNCNgCs6DXkGYLi8lr_2cc5spawn00B5_": "cc::spawn::{closure#0}::{closure#0}",
        "_RINbNbCskIICzLVDPPb_5alloc5alloc8box_freeDINbNiB4_5boxed5FnBoxuEp6OutputuEL_ECs1iopQbuBiw2_3std":
            "alloc::alloc::box_free::<dyn alloc::boxed::FnBox<(), Output = ()>>",
        "_RNvMC0INtC8arrayvec8ArrayVechKj7b_E3new": "<arrayvec::ArrayVec<u8, 123>>::new",
        "_RMCs4fqI2P2rA04_13const_genericINtB0_6SignedKanb_E": "<const_generic::Signed<-11>>",
        "_RMCs4fqI2P2rA04_13const_genericINtB0_4BoolKb1_E": "<const_generic::Bool<true>>",
        "_RMCs4fqI2P2rA04_13const_genericINtB0_4CharKc2202_E": "<const_generic::Char<'∂'>>",
        "_RNvNvMCs4fqI2P2rA04_13const_genericINtB4_3FooKpE3foo3FOO": "<const_generic::Foo<_>>::foo::FOO",
        "_RNqCs4fqI2P2rA04_11utf8_identsu30____7hkackfecea1cbdathfdh9hlq6y":
            "utf8_idents::საჭმელად_გემრიელი_სადილი",
    }
    for k, v in vectors.items():
        assert demangle(k) == v, k
