Counts from 00000 to 99999 and prints every number on a line of its own
Written by hand for the shimlab corpus: five counting loops nested one in
another; each digit is a cell that is printed and stepped up in place

cell layout  0 newline   1 scratch   2 to 6 the digits as characters (ten
             thousands first)   7 to 11 the five loop counters

++++++++++                                 cell 0 = 10 (newline)
>++++++++[>++++++>++++++>++++++>++++++>++++++<<<<<-]
                                           digits 2 to 6 = 48 ('0') each
>>>>>>++++++++++                           cell 7 = 10: ten thousands counter
[
  >++++++++++                              cell 8 = 10: thousands counter
  [
    >++++++++++                            cell 9 = 10: hundreds counter
    [
      >++++++++++                          cell 10 = 10: tens counter
      [
        >++++++++++                        cell 11 = 10: units counter
        [
          <<<<<<<<<.>.>.>.>.               print the five digits (cells 2 to 6)
          <<<<<<.                          and the newline (cell 0)
          >>>>>>+                          units digit up (cell 6)
          >>>>>-                           units counter down (cell 11)
        ]
        <<<<<----------                    units digit back to '0'
        <+                                 tens digit up (cell 5)
        >>>>>-                             tens counter down (cell 10)
      ]
      <<<<<----------<+>>>>>-              tens digit back to '0'; hundreds up; its counter down
    ]
    <<<<<----------<+>>>>>-
  ]
  <<<<<----------<+>>>>>-
]
