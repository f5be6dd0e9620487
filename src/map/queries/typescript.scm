; pai's additions for TypeScript and TSX, placed BEFORE the JavaScript and TypeScript grammars'
; own tags queries (on the same name the first pattern wins). TypeScript's own query covers
; only TS-specific nodes; these add type aliases and enums, and every type use as a reference,
; so the declarations whose names are type identifiers are listed first to stay definitions.

(interface_declaration name: (type_identifier) @name) @definition.interface
(class_declaration name: (type_identifier) @name) @definition.class
(abstract_class_declaration name: (type_identifier) @name) @definition.class
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.enum

(type_identifier) @name @reference.type
