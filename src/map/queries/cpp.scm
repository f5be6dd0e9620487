; pai's own tags query for C++, used INSTEAD of tree-sitter-cpp's, for the reasons given in
; c.scm (the declarator rather than the whole definition, no references), plus methods
; declared in a class body and namespaces. On the same name the first pattern wins, so
; definitions come before the catch-all type reference.

(function_definition
  declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(function_definition
  declarator: (pointer_declarator
    declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition
  declarator: (reference_declarator
    (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier name: (identifier) @name))) @definition.method
(function_definition
  declarator: (function_declarator declarator: (field_identifier) @name)) @definition.method
(field_declaration
  declarator: (function_declarator declarator: (field_identifier) @name)) @definition.method
(declaration
  declarator: (function_declarator declarator: (identifier) @name)) @definition.function

(class_specifier name: (type_identifier) @name body: (_)) @definition.class
(struct_specifier name: (type_identifier) @name body: (_)) @definition.struct
(union_specifier name: (type_identifier) @name body: (_)) @definition.struct
(enum_specifier name: (type_identifier) @name body: (_)) @definition.enum
(type_definition declarator: (type_identifier) @name) @definition.type
(alias_declaration name: (type_identifier) @name) @definition.type
(namespace_definition name: (namespace_identifier) @name) @definition.module
(preproc_def name: (identifier) @name) @definition.macro
(preproc_function_def name: (identifier) @name) @definition.macro
(enumerator name: (identifier) @name) @definition.constant

(call_expression function: (identifier) @name) @reference.call
(call_expression
  function: (qualified_identifier name: (identifier) @name)) @reference.call
(call_expression
  function: (field_expression field: (field_identifier) @name)) @reference.call
(type_identifier) @name @reference.type
