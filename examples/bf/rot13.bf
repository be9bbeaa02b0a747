GENERATED FILE: made by the script make_rot13 py in the folder examples slash bf slash gen
do not edit it by hand; change that script and run it again instead

rot13: prints the ROT13 of its input until the input ends
letters A to Z and a to z are rotated by 13 places; all other bytes pass unchanged
(a zero byte in the input ends the program like the end of input)

read the first byte
,[
copy the byte and count the copy down through the nested levels
[->+>>+<<<]>>>[-<<<+>>>]<<[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-
[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-[-
>+++++++++++++<[-[-[-[-[-[-[-[-[-[-[-[-[->--------------------------<[-[-[-[-[
-[-[-[-[-[-[-[-[->+++++++++++++<[-[-[-[-[-[->+++++++++++++<[-[-[-[-[-[-[-[-[-[
-[-[-[->--------------------------<[-[-[-[-[-[-[-[-[-[-[-[-[->+++++++++++++<[-
]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
apply the shift and print; then clear the cell and read the next byte
>[-<<+>>]<<.[-],]
