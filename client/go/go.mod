module shmkv

go 1.19
