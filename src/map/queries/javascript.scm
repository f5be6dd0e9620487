; pai's additions to tree-sitter-javascript's own tags query, placed BEFORE it (on the same name
; the first pattern wins). They compile against the JavaScript, TypeScript and TSX grammars
; alike: module-level `const` bindings to plain values are constants (the grammar's query only
; knows `export X = ...`), and imported names are references to their definitions elsewhere.

(program
  (lexical_declaration
    kind: "const"
    (variable_declarator
      name: (identifier) @name
      value: [(number) (string) (template_string) (array) (object) (call_expression)
              (new_expression) (member_expression) (identifier) (binary_expression)
              (true) (false) (null) (regex)]) @definition.constant))
(export_statement
  declaration: (lexical_declaration
    kind: "const"
    (variable_declarator
      name: (identifier) @name
      value: [(number) (string) (template_string) (array) (object) (call_expression)
              (new_expression) (member_expression) (identifier) (binary_expression)
              (true) (false) (null) (regex)]) @definition.constant))

(import_specifier name: (identifier) @name) @reference.import
