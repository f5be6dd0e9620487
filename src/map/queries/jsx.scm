; pai's addition for the grammars that know JSX (JavaScript and TSX): a capitalised element is
; a use of a component defined elsewhere. Lower-case elements are HTML tags, not references.

((jsx_opening_element name: (identifier) @name) @reference.class
  (#match? @name "^[A-Z]"))
((jsx_self_closing_element name: (identifier) @name) @reference.class
  (#match? @name "^[A-Z]"))
