module hostilesrv

go 1.25
