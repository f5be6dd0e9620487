; pai's additions to tree-sitter-rust's own tags query, placed BEFORE it: on the same name the
; first pattern wins, so these refine the grammar's kinds (it tags structs, enums, unions and
; type aliases all as "class") and add what it lacks (consts, statics, trait method
; signatures, type uses, calls through a path).

(struct_item name: (type_identifier) @name) @definition.struct
(union_item name: (type_identifier) @name) @definition.struct
(enum_item name: (type_identifier) @name) @definition.enum
(type_item name: (type_identifier) @name) @definition.type
(trait_item name: (type_identifier) @name) @definition.trait
(const_item name: (identifier) @name) @definition.constant
(static_item name: (identifier) @name) @definition.constant
(declaration_list
  (function_signature_item name: (identifier) @name) @definition.method)

(call_expression
  function: (scoped_identifier name: (identifier) @name)) @reference.call
(scoped_identifier path: (identifier) @name) @reference.type
(type_identifier) @name @reference.type
