CREATE TABLE alembic_version (
    version_num VARCHAR(32) NOT NULL, 
    CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);

-- Running upgrade  -> 0001

CREATE TABLE sequences (
    name VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, 
    next_value BIGINT NOT NULL, 
    PRIMARY KEY (name)
);

INSERT INTO sequences (name, next_value) VALUES ('invoice_no', 1000);

CREATE SEQUENCE order_id START WITH 1000 MINVALUE 1 NOCACHE;

CREATE TABLE seqkeys_workers (
    worker_id INTEGER NOT NULL, 
    owner VARCHAR(64) NOT NULL, 
    expires_at BIGINT NOT NULL, 
    high_water_ms BIGINT NOT NULL, 
    PRIMARY KEY (worker_id)
);

CREATE TABLE `UserAccessLogs` (
    `ShardId` BIGINT NOT NULL, 
    `LastAccess` DATETIME NOT NULL, 
    `UserId` BIGINT NOT NULL, 
    PRIMARY KEY (`ShardId`, `LastAccess`, `UserId`)
);

INSERT INTO alembic_version (version_num) VALUES ('0001') RETURNING alembic_version.version_num;

-- Running upgrade 0001 -> 0002

CREATE TABLE old_workers (
    worker_id INTEGER NOT NULL, 
    owner VARCHAR(64) NOT NULL, 
    expires_at BIGINT NOT NULL, 
    PRIMARY KEY (worker_id)
);

ALTER TABLE old_workers ADD COLUMN high_water_ms BIGINT NOT NULL DEFAULT 0;

UPDATE alembic_version SET version_num='0002' WHERE alembic_version.version_num = '0001';

-- Running downgrade 0002 -> 0001

ALTER TABLE old_workers DROP COLUMN high_water_ms;

DROP TABLE old_workers;

UPDATE alembic_version SET version_num='0001' WHERE alembic_version.version_num = '0002';

-- Running downgrade 0001 -> 

DROP TABLE `UserAccessLogs`;

DROP TABLE seqkeys_workers;

DROP SEQUENCE order_id;

DELETE FROM sequences WHERE sequences.name = 'invoice_no';

DROP TABLE sequences;

DELETE FROM alembic_version WHERE alembic_version.version_num = '0001';

