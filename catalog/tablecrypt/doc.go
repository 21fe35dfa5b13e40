// Package tablecrypt encrypts the files of tables that set Iceberg's
// encryption.key-id property, through iceberg-go's KMS interface.
//
// iceberg-go v0.7.0 defines the interfaces (encryption.KeyManagementClient,
// encryption.EncryptionManager, a KMS registry and an in-memory KMS) but
// no implementation that encrypts or decrypts: its readers and writers
// (table.(*Scan).ReadTasks, table.WriteRecords, the manifest and manifest
// list writers of a commit) never consult an EncryptionManager and do not
// fill key_metadata. So icefloe encrypts below them, in the table's FileIO:
//
//   - At CREATE TABLE, a fresh 256-bit table key is wrapped by the KMS under
//     the key id and stored, wrapped, in the table property WrappedKeyProp.
//   - Loading the table unwraps it (the coordinator holds the KMS); the
//     plain key travels to workers only inside sealed tickets, as the
//     storage property TableKeyProp, and is never logged.
//   - Every file under the table's location except the metadata JSON
//     (which catalogs and other engines read) is an AES-256-GCM stream in
//     the layout of Iceberg's AGS1 format (magic, block size, then blocks of
//     nonce, ciphertext and tag), under a per-file key derived with HKDF
//     from the table key and the file's path below the table location.
//     Each block's associated data binds its index and whether it is the
//     last, so blocks cannot be reordered, swapped between files or cut
//     off. Manifests, manifest lists, data and delete files are covered,
//     so neither rows nor column bounds can be read without the key.
//
// This is icefloe's scheme, not Iceberg Java's StandardEncryptionManager
// (which uses Parquet modular encryption and per-file key metadata):
// Iceberg Java and pyiceberg cannot read these tables.
package tablecrypt
