// Azure Managed Redis: the stream store every instance shares. Entra ID only: access keys are off
// and the app's identity is a user of the database through its default access policy.
param location string
param tags object
param name string
param principalId string

resource redis 'Microsoft.Cache/redisEnterprise@2025-04-01' = {
  name: name
  location: location
  tags: tags
  sku: { name: 'Balanced_B0' }
  properties: {
    minimumTlsVersion: '1.2'
  }
}

resource database 'Microsoft.Cache/redisEnterprise/databases@2025-04-01' = {
  parent: redis
  name: 'default'
  properties: {
    clientProtocol: 'Encrypted'
    port: 10000
    // One endpoint for the whole database: the app connects with a plain (non-cluster) client.
    clusteringPolicy: 'EnterpriseCluster'
    // Stream entries expire on their own; evicting them early would cut live streams.
    evictionPolicy: 'NoEviction'
    accessKeysAuthentication: 'Disabled'
  }
}

resource appAccess 'Microsoft.Cache/redisEnterprise/databases/accessPolicyAssignments@2025-04-01' = {
  parent: database
  name: 'app'
  properties: {
    accessPolicyName: 'default'
    user: {
      objectId: principalId
    }
  }
}

output hostName string = redis.properties.hostName
output port int = database.properties.port
