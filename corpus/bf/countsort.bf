Sorts the bytes of its input
Written by hand for the shimlab corpus: the bytes are read into records
of five cells (mark; value; flag; zero; round) and each of 255 rounds
walks all records; a record counts its value down and its round up and
prints the round on the round its value runs out (a byte of value v runs
out on round v; from then on it goes round the byte again and would come
back only on round v plus 256; which never comes)

cells   0 zero (the mark before the first record)    1 rounds left
        records from cell 5: mark is 1 for a byte and 0 after the last

>>>>>>,[<+>>>>>>,]                      read a byte a record until the end
<<<<<<[<<<<<]                           back to cell 0
>-                                      255 rounds
[                                       each round
  -
  >>>>                                  the first mark
  [                                     each record
    >>>>+                               round up
    <<<-                                value down
    >+<[>-]>                            flag = 1; left on the zero unless the value is zero
    [->>.<]                             then print the round
    >>                                  the next mark
  ]
  <<<<<[<<<<<]                          back to cell 0
  >
]
