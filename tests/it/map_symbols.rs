//! The repository map's symbol extractor: per language, the definitions (name, kind, line,
//! signature) and references (calls, type uses) of a realistic snippet; files of other kinds;
//! and that no input, however large or odd, panics or holds the caller past the time budget.

use std::time::{Duration, Instant};

use pai::map::symbols::{DefKind, Extractor, FileSymbols, Lang, MAX_SIGNATURE_CHARS};
use proptest::prelude::*;

/// The symbols of `text`, which must extract.
fn extract(lang: Lang, text: &str) -> FileSymbols {
    Extractor::new()
        .extract(lang, text)
        .unwrap_or_else(|e| panic!("{lang}: {e}"))
}

/// The definitions as (name, kind, line, signature), compared whole so an extra or a missing
/// definition fails the test.
fn defs(symbols: &FileSymbols) -> Vec<(&str, DefKind, u32, &str)> {
    symbols
        .defs
        .iter()
        .map(|d| (d.name.as_str(), d.kind, d.line, d.signature.as_str()))
        .collect()
}

/// Fails unless every (name, line) is among the references.
fn assert_refs(symbols: &FileSymbols, expected: &[(&str, u32)]) {
    for (name, line) in expected {
        assert!(
            symbols
                .refs
                .iter()
                .any(|r| r.name == *name && r.line == *line),
            "no reference to {name} on line {line}; refs: {:?}",
            symbols.refs
        );
    }
}

/// The end line of the named definition.
fn end_line(symbols: &FileSymbols, name: &str) -> u32 {
    symbols
        .defs
        .iter()
        .find(|d| d.name == name)
        .map(|d| d.end_line)
        .unwrap_or_else(|| panic!("no definition {name}"))
}

#[test]
fn python_definitions_and_references() {
    let s = extract(Lang::Python, PYTHON);
    assert_eq!(
        defs(&s),
        [
            ("PI_APPROX", DefKind::Constant, 4, "PI_APPROX = 3.14159"),
            ("Circle", DefKind::Class, 7, "class Circle(Shape):"),
            (
                "__init__",
                DefKind::Method,
                10,
                "def __init__(self, radius: float) -> None:"
            ),
            ("area", DefKind::Method, 14, "def area(self) -> float:"),
            (
                "square",
                DefKind::Function,
                18,
                "def square(x: float) -> float:"
            ),
            (
                "describe",
                DefKind::Function,
                22,
                "def describe(shape: Shape, precision: int = 2) -> str:"
            ),
        ]
    );
    assert_eq!(end_line(&s, "Circle"), 15);
    assert_eq!(end_line(&s, "describe"), 24);
    assert_refs(
        &s,
        &[
            ("Shape", 7),
            ("square", 15),
            ("Shape", 22),
            ("format_number", 24),
        ],
    );
}

#[test]
fn rust_definitions_and_references() {
    let s = extract(Lang::Rust, RUST);
    assert_eq!(
        defs(&s),
        [
            (
                "MAX_STEPS",
                DefKind::Constant,
                4,
                "pub const MAX_STEPS: usize = 64"
            ),
            ("Plan", DefKind::Struct, 6, "pub struct Plan"),
            ("Step", DefKind::Enum, 10, "pub enum Step"),
            ("Render", DefKind::Trait, 15, "pub trait Render"),
            ("render", DefKind::Method, 16, "fn render(&self) -> String"),
            ("render", DefKind::Method, 20, "fn render(&self) -> String"),
            (
                "parse",
                DefKind::Function,
                25,
                "pub fn parse(input: &str) -> Result<Plan, fmt::Error>"
            ),
            ("step", DefKind::Macro, 30, "macro_rules! step"),
        ]
    );
    assert_eq!(end_line(&s, "parse"), 28);
    assert_eq!(end_line(&s, "step"), 34);
    assert_refs(
        &s,
        &[
            ("Step", 7),
            ("Render", 19),
            ("Plan", 19),
            ("collect", 21),
            ("split_steps", 26),
            ("Plan", 27),
        ],
    );
}

#[test]
fn javascript_definitions_and_references() {
    let s = extract(Lang::JavaScript, JAVASCRIPT);
    assert_eq!(
        defs(&s),
        [
            (
                "TAX_RATE",
                DefKind::Constant,
                3,
                "export const TAX_RATE = 0.2"
            ),
            ("Cart", DefKind::Class, 5, "export class Cart"),
            ("total", DefKind::Method, 10, "total()"),
            (
                "priceWithTax",
                DefKind::Function,
                15,
                "function priceWithTax(item)"
            ),
            (
                "render",
                DefKind::Function,
                19,
                "export const render = (cart) =>"
            ),
        ]
    );
    assert_eq!(end_line(&s, "Cart"), 13);
    assert_refs(
        &s,
        &[
            ("formatMoney", 1),
            ("priceWithTax", 11),
            ("formatMoney", 20),
            ("total", 20),
        ],
    );
}

#[test]
fn typescript_definitions_and_references() {
    let s = extract(Lang::TypeScript, TYPESCRIPT);
    assert_eq!(
        defs(&s),
        [
            ("User", DefKind::Interface, 3, "export interface User"),
            ("UserId", DefKind::Type, 8, "export type UserId = number"),
            ("Role", DefKind::Enum, 10, "export enum Role"),
            (
                "UserService",
                DefKind::Class,
                15,
                "export class UserService"
            ),
            (
                "find",
                DefKind::Method,
                18,
                "find(id: UserId): User | undefined"
            ),
            (
                "lookup",
                DefKind::Function,
                24,
                "export function lookup(id: UserId): User | undefined"
            ),
        ]
    );
    assert_eq!(end_line(&s, "UserService"), 22);
    assert_refs(
        &s,
        &[
            ("Logger", 1),
            ("Logger", 16),
            ("UserId", 18),
            ("User", 18),
            ("lookup", 20),
        ],
    );
}

#[test]
fn tsx_definitions_and_references() {
    let s = extract(Lang::Tsx, TSX);
    assert_eq!(
        defs(&s),
        [
            ("Props", DefKind::Interface, 4, "interface Props"),
            (
                "Profile",
                DefKind::Function,
                8,
                "export function Profile({ name }: Props)"
            ),
            (
                "toInitials",
                DefKind::Function,
                17,
                "function toInitials(name: string): string"
            ),
        ]
    );
    // The component used as an element is a reference; the HTML tag is not.
    assert_refs(&s, &[("Props", 8), ("toInitials", 9), ("Avatar", 12)]);
    assert!(!s.refs.iter().any(|r| r.name == "div"), "{:?}", s.refs);
}

#[test]
fn go_definitions_and_references() {
    let s = extract(Lang::Go, GO);
    assert_eq!(
        defs(&s),
        [
            ("MaxItems", DefKind::Constant, 5, "const MaxItems = 100"),
            ("Store", DefKind::Struct, 7, "type Store struct"),
            ("Getter", DefKind::Interface, 11, "type Getter interface"),
            ("Get", DefKind::Method, 12, "Get(key string) (Item, error)"),
            ("NewStore", DefKind::Function, 15, "func NewStore() *Store"),
            (
                "Get",
                DefKind::Method,
                19,
                "func (s *Store) Get(key string) (Item, error)"
            ),
        ]
    );
    assert_eq!(end_line(&s, "NewStore"), 17);
    assert_refs(
        &s,
        &[
            ("Item", 8),
            ("Store", 15),
            ("Store", 19),
            ("New", 22),
            ("validate", 24),
        ],
    );
}

#[test]
fn java_definitions_and_references() {
    let s = extract(Lang::Java, JAVA);
    assert_eq!(
        defs(&s),
        [
            (
                "Account",
                DefKind::Class,
                5,
                "public class Account implements Auditable"
            ),
            (
                "MAX_TRANSFERS",
                DefKind::Constant,
                6,
                "public static final int MAX_TRANSFERS = 10"
            ),
            (
                "Account",
                DefKind::Method,
                10,
                "public Account(List<Transaction> history)"
            ),
            ("balance", DefKind::Method, 15, "public double balance()"),
            ("Auditable", DefKind::Interface, 20, "interface Auditable"),
            ("balance", DefKind::Method, 21, "double balance()"),
        ]
    );
    assert_eq!(end_line(&s, "Account"), 18);
    assert_refs(
        &s,
        &[
            ("Auditable", 5),
            ("Transaction", 8),
            ("Transaction", 10),
            ("sum", 16),
        ],
    );
}

#[test]
fn c_definitions_and_references() {
    let s = extract(Lang::C, C);
    assert_eq!(
        defs(&s),
        [
            ("MAX_NAME", DefKind::Macro, 3, "#define MAX_NAME 64"),
            ("point", DefKind::Struct, 5, "struct point"),
            ("point_t", DefKind::Type, 10, "typedef struct point point_t"),
            ("square", DefKind::Function, 12, "static int square(int v)"),
            (
                "distance2",
                DefKind::Function,
                14,
                "int distance2(const point_t *a, const point_t *b)"
            ),
            ("square", DefKind::Function, 21, "static int square(int v)"),
        ]
    );
    // The whole definition, body included (the grammar's own query stops at the declarator).
    assert_eq!(end_line(&s, "distance2"), 19);
    assert_refs(&s, &[("point", 10), ("point_t", 14), ("square", 18)]);
}

#[test]
fn cpp_definitions_and_references() {
    let s = extract(Lang::Cpp, CPP);
    assert_eq!(
        defs(&s),
        [
            ("geo", DefKind::Module, 3, "namespace geo"),
            ("Shape", DefKind::Class, 5, "class Shape"),
            (
                "area",
                DefKind::Method,
                8,
                "virtual double area() const = 0"
            ),
            ("name", DefKind::Method, 9, "std::string name() const"),
            ("area", DefKind::Method, 12, "double Shape::area() const"),
            (
                "count_shapes",
                DefKind::Function,
                16,
                "int count_shapes(const Shape& shape)"
            ),
        ]
    );
    assert_eq!(end_line(&s, "Shape"), 10);
    assert_eq!(end_line(&s, "geo"), 20);
    assert_refs(&s, &[("compute_area", 13), ("Shape", 16), ("name", 17)]);
}

#[test]
fn ruby_definitions_and_references() {
    let s = extract(Lang::Ruby, RUBY);
    assert_eq!(
        defs(&s),
        [
            ("Billing", DefKind::Module, 3, "module Billing"),
            (
                "DEFAULT_CURRENCY",
                DefKind::Constant,
                4,
                "DEFAULT_CURRENCY = \"EUR\""
            ),
            ("Invoice", DefKind::Class, 6, "class Invoice < Document"),
            ("initialize", DefKind::Method, 7, "def initialize(lines)"),
            ("total", DefKind::Method, 11, "def total"),
            ("parse", DefKind::Method, 15, "def self.parse(text)"),
        ]
    );
    assert_eq!(end_line(&s, "Invoice"), 18);
    assert_refs(&s, &[("Document", 6), ("price_of", 12), ("JSON", 16)]);
    // A block parameter is a local, not a reference to a definition elsewhere.
    assert!(!s.refs.iter().any(|r| r.name == "line"), "{:?}", s.refs);
}

#[test]
fn references_are_unique_per_name_and_line_and_at_least_two_chars() {
    let s = extract(Lang::Python, "x = f(g(1)) + g(2) + ab(ab(3))\n");
    let refs: Vec<_> = s.refs.iter().map(|r| (r.name.as_str(), r.line)).collect();
    assert_eq!(refs, [("ab", 1)]);
}

#[test]
fn languages_by_extension() {
    for (path, lang) in [
        ("a/b.py", Lang::Python),
        ("stubs/x.pyi", Lang::Python),
        ("src/main.rs", Lang::Rust),
        ("web/app.js", Lang::JavaScript),
        ("web/app.mjs", Lang::JavaScript),
        ("web/app.cjs", Lang::JavaScript),
        ("web/App.jsx", Lang::JavaScript),
        ("web/app.ts", Lang::TypeScript),
        ("types/index.d.ts", Lang::TypeScript),
        ("web/app.mts", Lang::TypeScript),
        ("web/App.tsx", Lang::Tsx),
        ("cmd/main.go", Lang::Go),
        ("src/Main.java", Lang::Java),
        ("lib/x.c", Lang::C),
        ("include/x.h", Lang::C),
        ("lib/x.cc", Lang::Cpp),
        ("lib/x.cpp", Lang::Cpp),
        ("lib/x.cxx", Lang::Cpp),
        ("include/x.hpp", Lang::Cpp),
        ("include/x.hh", Lang::Cpp),
        ("include/x.hxx", Lang::Cpp),
        ("lib/x.rb", Lang::Ruby),
        ("Rakefile", Lang::Ruby),
        ("x.gemspec", Lang::Ruby),
    ] {
        assert_eq!(Lang::from_path(path), Some(lang), "{path}");
    }
    for path in [
        "README.md",
        "Makefile",
        "a/b.txt",
        "x.pyc",
        ".py",
        "noext",
        "",
        "dir/",
    ] {
        assert_eq!(Lang::from_path(path), None, "{path}");
    }
}

/// Inputs of 2 MB that are hard on a parser: deep nesting, one huge line, binary-ish noise,
/// and a valid but long file.
fn pathological_inputs() -> Vec<(&'static str, String)> {
    const SIZE: usize = 2 * 1024 * 1024;
    let noise: String = (0..SIZE)
        .map(|i| char::from(u8::try_from((i * 7919 + i / 13) % 95 + 32).unwrap()))
        .collect();
    vec![
        (
            "nesting",
            format!("{}{}", "([{".repeat(SIZE / 6), "}])".repeat(SIZE / 6)),
        ),
        ("one line", "a = b + c; ".repeat(SIZE / 11)),
        ("noise", noise),
        (
            "long file",
            "def f(a):\n    return g(a)\n\n".repeat(SIZE / 28),
        ),
    ]
}

#[test]
fn two_megabyte_pathological_inputs_return_within_the_budget() {
    let budget = Duration::from_millis(200);
    let mut extractor = Extractor::with_budget(budget);
    for (name, text) in pathological_inputs() {
        for lang in Lang::ALL {
            let start = Instant::now();
            let result = extractor.extract(lang, &text);
            let took = start.elapsed();
            // Cut off or done: either way the caller is not held much past the budget (the
            // slack covers a loaded test machine and the walk over tags already found).
            assert!(
                took < budget + Duration::from_secs(3),
                "{lang} on {name}: {took:?} ({:?})",
                result.map(|s| s.defs.len())
            );
        }
    }
}

#[test]
fn a_cut_off_extraction_says_so_and_the_next_one_runs_in_full() {
    // 2 MB of ordinary Python (27 bytes a function): well over 150 ms to parse even in a
    // release build.
    let text = "def f(a):\n    return g(a)\n\n".repeat(75_000);
    let mut extractor = Extractor::with_budget(Duration::from_millis(150));
    let err = extractor.extract(Lang::Python, &text).unwrap_err();
    assert!(err.to_string().contains("took longer than 150 ms"), "{err}");
    // The same extractor, right after and once its old deadline has long passed: each
    // extraction has its own budget, so the cut-off never carries over.
    for pause in [0, 0, 300] {
        std::thread::sleep(Duration::from_millis(pause));
        let s = extractor.extract(Lang::Python, &text[..2_700]).unwrap();
        assert_eq!(s.defs.len(), 100);
    }
}

#[test]
fn an_extractor_moves_to_a_worker_thread() {
    let mut extractor = Extractor::new();
    extractor.extract(Lang::Go, "package a\n").unwrap();
    let worker = std::thread::spawn(move || {
        let s = extractor
            .extract(Lang::Go, "package a\n\nfunc Run() {}\n")
            .unwrap();
        s.defs.iter().map(|d| d.name.clone()).collect::<Vec<_>>()
    });
    assert_eq!(worker.join().unwrap(), ["Run"]);
}

#[test]
fn signatures_are_capped() {
    let params: Vec<String> = (0..100).map(|i| format!("p{i}: int")).collect();
    let text = format!("def wide({}):\n    pass\n", params.join(", "));
    let s = extract(Lang::Python, &text);
    assert_eq!(s.defs.len(), 1);
    assert_eq!(s.defs[0].signature.chars().count(), MAX_SIGNATURE_CHARS);
    assert!(s.defs[0].signature.starts_with("def wide(p0: int, p1: int"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// No string makes any language's extraction panic.
    #[test]
    fn arbitrary_text_never_panics(
        text in prop_oneof![
            any::<String>(),
            "[(){}\\[\\];:,.=<>!@#$%&*/\\\\'\"`a-zA-Z0-9_ \t\n-]{0,600}",
        ]
    ) {
        let mut extractor = Extractor::new();
        for lang in Lang::ALL {
            if let Ok(s) = extractor.extract(lang, &text) {
                let lines = u32::try_from(text.lines().count().max(1)).unwrap();
                for d in &s.defs {
                    prop_assert!(d.line >= 1 && d.line <= d.end_line && d.end_line <= lines);
                    prop_assert!(d.signature.chars().count() <= MAX_SIGNATURE_CHARS);
                }
                for r in &s.refs {
                    prop_assert!(r.name.chars().count() >= 2 && r.line <= lines);
                }
            }
        }
    }
}

const PYTHON: &str = r#"import math
from .models import Shape

PI_APPROX = 3.14159


class Circle(Shape):
    """A circle."""

    def __init__(self, radius: float) -> None:
        self.radius = radius

    @property
    def area(self) -> float:
        return math.pi * square(self.radius)


def square(x: float) -> float:
    return x * x


def describe(shape: Shape,
             precision: int = 2) -> str:
    return format_number(shape.area, precision)
"#;

const RUST: &str = r#"use std::fmt;

/// The largest plan accepted.
pub const MAX_STEPS: usize = 64;

pub struct Plan {
    steps: Vec<Step>,
}

pub enum Step {
    Read(String),
    Write(String),
}

pub trait Render {
    fn render(&self) -> String;
}

impl Render for Plan {
    fn render(&self) -> String {
        self.steps.iter().map(describe).collect()
    }
}

pub fn parse(input: &str) -> Result<Plan, fmt::Error> {
    let steps = split_steps(input)?;
    Ok(Plan { steps })
}

macro_rules! step {
    ($e:expr) => {
        Step::Read($e.to_string())
    };
}
"#;

const JAVASCRIPT: &str = r#"import { formatMoney } from './format.js';

export const TAX_RATE = 0.2;

export class Cart {
  constructor() {
    this.items = [];
  }

  total() {
    return this.items.reduce((sum, item) => sum + priceWithTax(item), 0);
  }
}

function priceWithTax(item) {
  return item.price * (1 + TAX_RATE);
}

export const render = (cart) => {
  return formatMoney(cart.total());
};
"#;

const TYPESCRIPT: &str = r#"import { Logger } from "./logger";

export interface User {
  id: number;
  name: string;
}

export type UserId = number;

export enum Role {
  Admin,
  Member,
}

export class UserService {
  constructor(private readonly logger: Logger) {}

  find(id: UserId): User | undefined {
    this.logger.info("find");
    return lookup(id);
  }
}

export function lookup(id: UserId): User | undefined {
  return undefined;
}
"#;

const TSX: &str = r#"import React from "react";
import { Avatar } from "./Avatar";

interface Props {
  name: string;
}

export function Profile({ name }: Props) {
  const initials = toInitials(name);
  return (
    <div className="profile">
      <Avatar text={initials} />
    </div>
  );
}

function toInitials(name: string): string {
  return name.split(" ").map((w) => w[0]).join("");
}
"#;

const GO: &str = r#"package store

import "errors"

const MaxItems = 100

type Store struct {
	items map[string]Item
}

type Getter interface {
	Get(key string) (Item, error)
}

func NewStore() *Store {
	return &Store{items: make(map[string]Item)}
}

func (s *Store) Get(key string) (Item, error) {
	item, ok := s.items[key]
	if !ok {
		return Item{}, errors.New("not found")
	}
	return validate(item)
}
"#;

const JAVA: &str = r#"package com.example.bank;

import java.util.List;

public class Account implements Auditable {
    public static final int MAX_TRANSFERS = 10;

    private final List<Transaction> history;

    public Account(List<Transaction> history) {
        this.history = history;
    }

    @Override
    public double balance() {
        return Ledger.sum(history);
    }
}

interface Auditable {
    double balance();
}
"#;

const C: &str = r#"#include <stdio.h>

#define MAX_NAME 64

struct point {
    int x;
    int y;
};

typedef struct point point_t;

static int square(int v);

int distance2(const point_t *a, const point_t *b)
{
    int dx = a->x - b->x;
    int dy = a->y - b->y;
    return square(dx) + square(dy);
}

static int square(int v) { return v * v; }
"#;

const CPP: &str = r#"#include <string>

namespace geo {

class Shape {
public:
    virtual ~Shape() = default;
    virtual double area() const = 0;
    std::string name() const;
};

double Shape::area() const {
    return compute_area(*this);
}

int count_shapes(const Shape& shape) {
    return shape.name().size() > 0 ? 1 : 0;
}

}  // namespace geo
"#;

const RUBY: &str = r#"require "json"

module Billing
  DEFAULT_CURRENCY = "EUR"

  class Invoice < Document
    def initialize(lines)
      @lines = lines
    end

    def total
      @lines.sum { |line| price_of(line) }
    end

    def self.parse(text)
      new(JSON.parse(text))
    end
  end
end
"#;
