cat bf: copies every input byte to the output until the input ends
written by hand for the shimlab corpus
at the end of input a read leaves the cell unchanged so the cell is cleared
before each read; a zero cell after the read means the input is over
(a zero byte in the input also stops the copy)

,                 read the first byte
[                 while the cell holds a byte
  .               write it
  [-]             clear the cell
  ,               read the next byte
]
