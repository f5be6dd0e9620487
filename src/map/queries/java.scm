; pai's additions to tree-sitter-java's own tags query, placed BEFORE it (on the same name the
; first pattern wins): enums, records, annotation types, constructors and constants are
; definitions, and every type use is a reference (the grammar's query only has classes,
; interfaces, methods, calls and `new`).

(enum_declaration name: (identifier) @name) @definition.enum
(record_declaration name: (identifier) @name) @definition.class
(annotation_type_declaration name: (identifier) @name) @definition.interface
(constructor_declaration name: (identifier) @name) @definition.method
(field_declaration
  (modifiers "static" "final")
  declarator: (variable_declarator name: (identifier) @name)) @definition.constant
(constant_declaration
  declarator: (variable_declarator name: (identifier) @name)) @definition.constant

(type_identifier) @name @reference.type
