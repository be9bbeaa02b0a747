hello bf: prints the greeting Hello from shimlab! followed by a newline
written by hand for the shimlab corpus

cell 1 holds uppercase letters; cell 2 lowercase; cell 3 punctuation; cell 4 the newline
twelve rounds of six and nine and three give 72 and 108 and 36
++++++++++++[>++++++>+++++++++>+++<<<-]
>>>>++++++++++                  newline 10 in cell 4

<<<.                            H
>-------.                       e
+++++++..                       l l
+++.                            o
>----.                          space
<---------.                     f
++++++++++++.                   r
---.                            o
--.                             m
>.                              space
<++++++.                        s
-----------.                    h
+.                              i
++++.                           m
-.                              l
-----------.                    a
+.                              b
>+.                             exclamation mark
>.                              newline
